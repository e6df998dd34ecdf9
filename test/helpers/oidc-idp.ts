// A real OpenID Connect provider for tests (panva's oidc-provider), plus the browser steps of a
// sign-in driven with fetch: the test follows the IdP's redirects itself, keeps its cookies, and
// completes the IdP's own login and consent forms (devInteractions) as a user would.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
// @ts-expect-error oidc-provider 9 ships no type declarations (and @types/oidc-provider is not installed)
import Provider from 'oidc-provider';
import { freePort } from './service.js';
import { readResponse } from './env.js';

export interface IdpAccount {
  email?: string;
  email_verified?: boolean;
  name?: string;
  given_name?: string;
  family_name?: string;
  picture?: string;
  [claim: string]: unknown;
}

export interface OidcIdp {
  /** the issuer the IdP reports in discovery and tokens */
  issuer: string;
  /** where it listens (equals issuer unless `advertisedIssuer` was given) */
  url: string;
  clientId: string;
  clientSecret: string;
  setAccount(sub: string, claims: IdpAccount): void;
  /**
   * Registers one more redirect URI for the client (exact match, as real IdPs do): an OIDC provider's
   * callback_url is its own and known once it is created, so tests register it then.
   */
  allowRedirect(uri: string): void;
  /**
   * Plays the browser from the authorization URL to the moment the IdP sends it back to the
   * relying party; logs in as `sub` and consents. Returns that redirect (the RP's callback URL).
   */
  login(authorizationUrl: string, sub: string, opts?: { cancel?: boolean }): Promise<string>;
  stop(): Promise<void>;
}

export interface IdpOptions {
  redirectUris: string[];
  clientId?: string;
  clientSecret?: string;
  /** report this issuer instead of the listening URL (a misconfigured IdP) */
  advertisedIssuer?: string;
  /** extra claims released under the profile scope */
  extraClaims?: string[];
  /**
   * Act as an IdP without RFC 9207 (Entra ID, Google, Okta): discovery does not claim
   * authorization_response_iss_parameter_supported, and its redirects carry no `iss`.
   */
  withoutIss?: boolean;
}

export async function startOidcIdp(opts: IdpOptions): Promise<OidcIdp> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const issuer = opts.advertisedIssuer ?? url;
  const clientId = opts.clientId ?? 'sso-test-client';
  const clientSecret = opts.clientSecret ?? 'sso-test-secret-0123456789abcdef';
  const accounts = new Map<string, IdpAccount>();

  const provider = new Provider(issuer, {
    // (the static list may not be empty; tests add the URIs their providers are given: allowRedirect)
    clients: [{ client_id: clientId, client_secret: clientSecret, redirect_uris: opts.redirectUris.length ? opts.redirectUris : ['http://127.0.0.1/unused'], grant_types: ['authorization_code'], response_types: ['code'] }],
    async findAccount(_ctx: unknown, sub: string) {
      const claims = accounts.get(sub);
      if (!claims) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...claims }) };
    },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'given_name', 'family_name', 'picture', ...(opts.extraClaims ?? [])],
    },
    cookies: { keys: ['oidc-idp-test-cookie-key'] },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, IdToken: 600, Interaction: 600, Session: 3600 },
    features: { devInteractions: { enabled: true } },
  });
  // the client's redirect URIs, exact strings, growing as providers are made (allowRedirect)
  const redirects = new Set(opts.redirectUris);
  provider.Client.prototype.redirectUriAllowed = (value: unknown) => typeof value === 'string' && redirects.has(value);
  if (opts.withoutIss) {
    provider.use(async (ctx: { path: string; body: unknown }, next: () => Promise<void>) => {
      await next();
      if (ctx.path === '/.well-known/openid-configuration' && ctx.body && typeof ctx.body === 'object') delete (ctx.body as Record<string, unknown>).authorization_response_iss_parameter_supported;
    });
  }
  // oidc-provider logs development-mode warnings through console; keep test output clean
  provider.on('server_error', () => {});
  const server = http.createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));

  const withoutIss = opts.withoutIss === true;
  async function login(authorizationUrl: string, sub: string, opts: { cancel?: boolean } = {}): Promise<string> {
    const jar = new Map<string, string>();
    const go = async (target: string, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      if (jar.size) headers.set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '));
      const res = await fetch(target, { ...init, headers, redirect: 'manual' });
      for (const c of res.headers.getSetCookie()) {
        const pair = c.split(';')[0];
        const name = pair.slice(0, pair.indexOf('='));
        const value = pair.slice(pair.indexOf('=') + 1);
        if (!value || /expires=Thu, 01 Jan 1970/i.test(c)) jar.delete(name);
        else jar.set(name, value);
      }
      return res;
    };
    let current = authorizationUrl;
    let res = await go(current);
    for (let step = 0; step < 12; step++) {
      const location = res.headers.get('location');
      if (!location) throw new Error(`IdP answered ${res.status} at ${current}: ${(await res.text()).slice(0, 500)}`);
      const next = new URL(location, current);
      if (next.origin !== new URL(url).origin && next.origin !== new URL(issuer).origin) {
        if (withoutIss) next.searchParams.delete('iss');
        return next.href;
      }
      current = next.href;
      const interaction = /\/interaction\/([^/?#]+)$/.exec(next.pathname);
      if (!interaction) {
        res = await go(current);
        continue;
      }
      if (opts.cancel) {
        // the user cancels at the IdP: it answers the relying party with error=access_denied
        res = await go(`${url}/interaction/${interaction[1]}/abort`);
        continue;
      }
      const page = await (await go(current)).text();
      const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
      const form: Record<string, string> = prompt === 'login' ? { prompt, login: sub, password: 'any' } : { prompt: prompt ?? 'consent' };
      res = await go(`${url}/interaction/${interaction[1]}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      });
    }
    throw new Error('IdP sign-in did not finish within 12 steps');
  }

  return {
    issuer,
    url,
    clientId,
    clientSecret,
    setAccount: (sub, claims) => void accounts.set(sub, claims),
    allowRedirect: (uri) => void redirects.add(uri),
    login,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}


// ---- the relying-party side, as a browser and a client application would drive it ----

export interface AuthTarget {
  projectUrl: string;
  anonKey: string;
}

export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** POST {project_url}/auth/v1/<path> with the anon key, as auth-js does. */
export async function authCall(p: AuthTarget, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${p.projectUrl}/auth/v1${path}`, {
    method,
    redirect: 'manual',
    headers: { apikey: p.anonKey, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return readResponse(res);
}

/** Starts a sign-in (skip_http_redirect) and returns the IdP URL with the PKCE verifier to keep. */
export async function startSignIn(p: AuthTarget, selector: Record<string, string>, redirectTo?: string) {
  const { verifier, challenge } = pkcePair();
  const r = await authCall(p, 'POST', '/sso', { ...selector, redirect_to: redirectTo, skip_http_redirect: true, code_challenge: challenge, code_challenge_method: 's256' });
  return { ...r, url: r.body?.url as string | undefined, verifier };
}

/** The browser arriving at the service's callback: returns where the service sends it next. */
export async function arriveAt(callbackUrl: string): Promise<URL> {
  const res = await fetch(callbackUrl, { redirect: 'manual' });
  const location = res.headers.get('location');
  if (res.status !== 303 || !location) throw new Error(`expected a 303 from ${callbackUrl}, got ${res.status}: ${await res.text()}`);
  return new URL(location);
}

/** The whole browser part: service → IdP (login as sub) → service → back at redirect_to. */
export async function signInThrough(idp: OidcIdp, p: AuthTarget, sub: string, selector: Record<string, string>, redirectTo?: string) {
  const started = await startSignIn(p, selector, redirectTo);
  if (!started.url) throw new Error(`sign-in did not start: ${started.status} ${JSON.stringify(started.body)}`);
  const landed = await arriveAt(await idp.login(started.url, sub));
  return { landed, verifier: started.verifier, code: landed.searchParams.get('code'), error: landed.searchParams.get('error') };
}

export const exchangeCode = (p: AuthTarget, code: string, verifier: string) =>
  authCall(p, 'POST', '/token?grant_type=pkce', { auth_code: code, code_verifier: verifier });
