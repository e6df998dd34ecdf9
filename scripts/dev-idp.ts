// npm run dev:idp — a local OpenID Connect identity provider for trying SSO in development
// (panva's oidc-provider, a devDependency: it is not part of a production install).
//
// Anyone can sign in with any user name and any password: "ann" becomes ann@example.com, a name
// with an @ is used as it is. The client is fixed (dev-idp / dev-idp-secret) and its redirect URIs
// are the development project's OIDC callbacks, taken from $API and $REF (the export line npm start
// prints). /app/callback is a stand-in for your application: the page a sign-in returns to, which
// shows the code and the command that exchanges it for a session.
//
// DEV_IDP_PORT (default 9400) moves it. Never expose it: it signs in whoever asks.
import http from 'node:http';

// oidc-provider warns (on stderr) about each development shortcut this script takes on purpose
const warn = console.warn;
console.warn = (...args: unknown[]) => (String(args[0]).startsWith('oidc-provider WARNING') ? undefined : warn(...args));
// imported after the line above: it warns as it loads
// @ts-expect-error oidc-provider 9 ships no type declarations
const { default: Provider } = await import('oidc-provider');
const port = Number(process.env.DEV_IDP_PORT ?? 9400);
const api = (process.env.API ?? 'http://127.0.0.1:8000').replace(/\/$/, '');
const ref = process.env.REF ?? 'dev';
const issuer = `http://127.0.0.1:${port}`;
export const DEV_IDP_CLIENT = { client_id: 'dev-idp', client_secret: 'dev-idp-secret' };
const callback = `${api}/projects/${ref}/auth/v1/sso/oidc/callback`;

const provider = new Provider(issuer, {
  clients: [{ ...DEV_IDP_CLIENT, redirect_uris: [callback], grant_types: ['authorization_code'], response_types: ['code'] }],
  async findAccount(_ctx: unknown, sub: string) {
    const email = sub.includes('@') ? sub : `${sub}@example.com`;
    return { accountId: sub, claims: async () => ({ sub, email, email_verified: true, name: sub.split('@')[0] }) };
  },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  cookies: { keys: ['dev-idp-cookie-key'] },
  features: { devInteractions: { enabled: true } },
});
// Each OIDC provider has a redirect URI of its own (…/sso/oidc/callback/{provider id}), known only
// once it is created: this development IdP takes any under the project's callback path (a real IdP
// registers the exact one, which is what keeps one IdP's codes from another provider).
provider.Client.prototype.redirectUriAllowed = (value: unknown) => typeof value === 'string' && (value === callback || value.startsWith(`${callback}/`));
provider.on('server_error', (_ctx: unknown, err: Error) => console.error(`dev-idp: ${err.message}`));

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function appCallback(url: URL, res: http.ServerResponse) {
  const code = url.searchParams.get('code');
  const error = url.searchParams.get('error');
  const body = code
    ? `<h1>Signed in at the IdP</h1><p>The service sent the browser back with a code:</p><pre id="code">${escape(code)}</pre>
<p>Exchange it for a session (with the verifier you started the sign-in with):</p>
<pre>CODE=${escape(code)}
curl -s -X POST "$PROJECT_URL/auth/v1/token?grant_type=pkce" -H "apikey: $ANON_KEY" -H 'content-type: application/json' \\
  -d '{"auth_code":"'$CODE'","code_verifier":"'$VERIFIER'"}'</pre>`
    : `<h1>Sign-in failed</h1><pre id="error">${escape(error ?? 'no code')}: ${escape(url.searchParams.get('error_description') ?? '')}</pre>`;
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': "default-src 'none'" });
  res.end(`<!doctype html><meta charset="utf-8"><title>dev app</title>${body}`);
}

const handle = provider.callback();
const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', issuer);
  if (url.pathname === '/app/callback') return appCallback(url, res);
  handle(req, res);
});
server.listen(port, '127.0.0.1', () => {
  console.log(`dev OIDC IdP on ${issuer} — client_id ${DEV_IDP_CLIENT.client_id}, client_secret ${DEV_IDP_CLIENT.client_secret}`);
  console.log(`  redirect URI: ${callback}`);
  console.log(`  sign-ins return to the stand-in app page ${issuer}/app/callback; any user name and password work`);
  console.log('  development only: in-memory state, built-in keys and login pages; never expose it');
});
server.on('error', (e: NodeJS.ErrnoException) => {
  console.error(e.code === 'EADDRINUSE' ? `port ${port} is in use (an IdP already running?); pick another: DEV_IDP_PORT=${port + 1} npm run dev:idp` : e.message);
  process.exit(2);
});
for (const s of ['SIGINT', 'SIGTERM'] as const) process.on(s, () => server.close(() => process.exit(0)).closeAllConnections());
