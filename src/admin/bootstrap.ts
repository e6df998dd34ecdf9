// On the first `npm start` with an empty control database, create a development project so a new
// user has something to call at once; its credentials are printed as one JSON line, followed by
// the few commands of a first webhook and a first SSO sign-in (firstRunGuide).
import type { AppContext } from '../context.js';
import { createProject, issueOwnerToken } from '../projects/index.js';
import { ensureOutboxEnabled } from '../outbox/index.js';

export interface DevProject {
  ref: string;
  owner_token: string;
  anon_key: string;
  project_url: string;
  database_url: string;
}

/**
 * Where the development project's sign-ins may return: any port on loopback (the dev IdP's own
 * callback page, a local app on :3000, ...). Only this project, only in development.
 */
export const DEV_REDIRECTS = ['http://127.0.0.1:*/**', 'http://localhost:*/**'];

export async function bootstrapDevProject(ctx: AppContext): Promise<DevProject | null> {
  if (!ctx.cfg.DEV_BOOTSTRAP) return null;
  const r = await ctx.db.query('select count(*)::int as n from projects');
  if (r.rows[0].n > 0) return null;
  const ref = ctx.cfg.DEV_PROJECT_REF;
  const p = await createProject(ctx, { ref, plan: 'enterprise', ownerEmail: 'dev@localhost', redirectUrls: DEV_REDIRECTS });
  const { token } = await issueOwnerToken(ctx, p.owner_id, 'bootstrap');
  // so base.http_request and base.send_email work in the dev project from the first minute
  await ensureOutboxEnabled(ctx, p.ref);
  ctx.log.info('created a development project (plan enterprise); keep this owner token, it is shown once:');
  const dev = { ref: p.ref, owner_token: token, anon_key: p.anon_key, project_url: p.project_url, database_url: p.database_url };
  console.log(JSON.stringify(dev));
  return dev;
}

const shellQuote = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * What a newcomer does next, printed once after the dev project's JSON line. The export line sets
 * the variables the README's quick start uses, so its commands can be pasted as they are.
 */
export function firstRunGuide(opts: { dev: DevProject; api: string; mailUrl: string | null; dashboardUrl: string }): string {
  const { dev } = opts;
  const exports = { API: opts.api, REF: dev.ref, OWNER_TOKEN: dev.owner_token, ANON_KEY: dev.anon_key, PROJECT_URL: dev.project_url, DB: dev.database_url };
  return [
    '',
    'Next steps — in another terminal:',
    `  export ${Object.entries(exports).map(([k, v]) => `${k}=${shellQuote(v)}`).join(' ')}`,
    `  dashboard:     ${opts.dashboardUrl} (sign in with the owner token)`,
    `  API reference: ${opts.api}/docs`,
    '  a first webhook (README, "A first webhook"):',
    `    psql "$DB" -c 'create table orders (id bigserial primary key, total int)'`,
    `    curl -s -w '\\n' -X POST "$API/v1/projects/$REF/webhooks" -H "authorization: Bearer $OWNER_TOKEN" -H 'content-type: application/json' \\`,
    `      -d '{"name":"orders","table":"public.orders","events":["INSERT"],"url":"http://127.0.0.1:9000/"}'`,
    `    psql "$DB" -c 'insert into orders (total) values (42)'`,
    ...(opts.mailUrl ? [`  mail sent with base.send_email(...) is caught here: ${opts.mailUrl}`] : []),
    '  a first SSO sign-in: README, "A first SSO sign-in" (npm run dev:idp starts a local OIDC provider)',
    '',
  ].join('\n');
}
