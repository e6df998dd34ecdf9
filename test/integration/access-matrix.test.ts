// The authorization matrix, generated from the route table: every route the service registers ×
// every kind of caller × every spelling of its path, against the real service on the real stack.
// Nobody lists routes here: a route added tomorrow is in the table (src/http/access.ts records
// every registration with its declared access) and so in this test.
//
// Expected:
//   - the right caller, canonical path: past the guard (no refusal code of the route's kind, no
//     3xx or 5xx);
//   - every other caller, every spelling: 400/401/403/404/405/410 with a refusal or routing code,
//     never 2xx/3xx/5xx, never validation_failed (a body was looked at), and nothing changes in the
//     control database or the project's database;
//   - public routes are exactly the reviewed list below: making a route public is a change to this
//     file, in review, not a line no one reads.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeAccessTable, type RouteAccess } from '../../src/http/access.js';
import { buildServer } from '../../src/http/server.js';
import { createLogger } from '../../src/lib/logger.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { dbUrl, sql } from '../helpers/env.js';

/** Every route anyone may call without a credential, and why: reviewed by hand. */
const PUBLIC_ROUTES: Record<string, string> = {
  'GET /health': 'operations: health of the parts, no project data',
  'GET /openapi.json': 'the API description',
  'GET /docs': 'the API description, rendered',
  'GET /docs/': 'the API description, rendered',
  'GET /docs/json': 'the API description',
  'GET /docs/yaml': 'the API description',
  'GET /docs/static/*': 'the docs UI assets',
  'GET /docs/static/index.html': 'the docs UI page',
  'GET /docs/static/swagger-initializer.js': 'the docs UI page',
  'GET /dashboard/': 'the dashboard page (its data comes from the API with the owner token)',
  'GET /dashboard/*': 'the dashboard assets and the setup page',
  'OPTIONS /projects/:ref/auth/v1/*': 'CORS preflight of the public auth API',
  'GET /projects/:ref/auth/v1/sso/oidc/callback': "the IdP's redirect (providers made before per-provider URIs): the flow state and the signed ID token are the credential",
  'GET /projects/:ref/auth/v1/sso/oidc/callback/:provider': "an OIDC provider's own redirect URI: the flow state, taken only here for its provider, and the signed ID token are the credential",
  'GET /projects/:ref/auth/v1/sso/saml/metadata/:providerId': 'SP metadata for the IdP admin (public by nature)',
  'POST /projects/:ref/auth/v1/sso/saml/acs/:providerId': "the IdP's signed SAML response is the credential",
  'GET /dev/mail': 'development mail sink (never registered in production)',
  'GET /dev/mail/:id': 'development mail sink',
  'GET /dev/mail/:id/html': 'development mail sink',
};
const keyOf = (r: { method: string; url: string }) => `${r.method} ${r.url}`;

/** What the guard of each kind answers when it refuses: a right caller must never see one of these. */
const REFUSED_BY: Record<RouteAccess['access'], string[]> = {
  public: [],
  owner: ['unauthorized'],
  'project-owner': ['unauthorized', 'project_not_found', 'feature_not_in_plan'],
  'api-key': ['invalid_api_key'],
  'setup-link': ['sso_setup_link_not_found', 'sso_setup_link_gone', 'feature_not_in_plan'],
};
const REFUSALS = new Set(Object.values(REFUSED_BY).flat());
/** What a wrong caller may get: a refusal, or no route for that spelling. */
const WRONG_OK_CODES = new Set([...REFUSALS, 'not_found', 'bad_request', 'method_not_allowed']);
const WRONG_OK_STATUS = new Set([400, 401, 403, 404, 405, 410]);

interface Answer {
  status: number;
  code?: string;
  body: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/** A raw request: the path goes on the request line exactly as given (no URL normalisation). */
function send(base: URL, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: base.hostname, port: base.port, method, path, agent, headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let code: string | undefined;
        try {
          code = JSON.parse(text)?.code;
        } catch {}
        resolve({ status: res.statusCode!, code, body: text.slice(0, 300) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Runs fn over items, `n` at a time. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

/** The route's URL with its parameters filled in: the project's ref, made-up ids, a wildcard tail. */
function fill(url: string, ref: string): string {
  return url
    .replace(/:ref\b/g, ref)
    .replace(/:name\b/g, 'MATRIX_SECRET')
    .replace(/:[A-Za-z]+/g, () => randomUUID())
    .replace(/\*$/, 'index.html');
}

const pct = (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`;

/**
 * The spellings of one canonical path an attacker would try. Each either reaches the same route
 * (the router decodes and tolerates) or no route; the guard must hold in both cases.
 */
export function spellings(path: string): Array<{ how: string; path: string }> {
  const segs = path.split('/').slice(1);
  const out: Array<{ how: string; path: string }> = [];
  const join = (s: string[]) => `/${s.join('/')}`;
  segs.forEach((seg, i) => {
    const at = seg.search(/[A-Za-z0-9]/);
    if (at < 0) return;
    const enc = [...segs];
    enc[i] = seg.slice(0, at) + pct(seg[at]) + seg.slice(at + 1);
    out.push({ how: `percent-encoded character in segment ${i + 1}`, path: join(enc) });
    const lower = [...segs];
    lower[i] = seg.slice(0, at) + pct(seg[at]).toLowerCase() + seg.slice(at + 1);
    out.push({ how: `lower-case percent-encoding in segment ${i + 1}`, path: join(lower) });
    const dbl = [...segs];
    dbl[i] = seg.slice(0, at) + `%25${seg.charCodeAt(at).toString(16)}` + seg.slice(at + 1);
    out.push({ how: `double encoding in segment ${i + 1}`, path: join(dbl) });
    const upper = [...segs];
    upper[i] = seg.toUpperCase();
    out.push({ how: `upper case segment ${i + 1}`, path: join(upper) });
    const semi = [...segs];
    semi[i] = `${seg};x=1`;
    out.push({ how: `;params on segment ${i + 1}`, path: join(semi) });
  });
  const all = path.replace(/[A-Za-z0-9]/g, pct);
  out.push(
    { how: 'every character percent-encoded', path: all },
    { how: 'upper case', path: path.toUpperCase() },
    { how: 'leading //', path: `/${path}` },
    { how: '// between segments', path: path.replace(/\//g, '//') },
    { how: '/./ between segments', path: path.replace(/\//g, '/./') },
    { how: '/x/../ in front', path: `/x/..${path}` },
    { how: '%2e%2e segments', path: `/x/%2e%2e${path}` },
    { how: 'encoded slashes', path: `/${segs.join('%2F')}` },
    { how: 'backslashes', path: `/${segs.join('\\')}` },
    { how: 'trailing slash', path: `${path}/` },
    { how: 'trailing /.', path: `${path}/.` },
    { how: 'query string', path: `${path}?x=1` },
    { how: 'fragment-like %23', path: `${path}%23x` },
    { how: 'absolute-form, another host', path: `http://evil.example${path}` },
    { how: 'absolute-form, https and userinfo', path: `https://user:pass@evil.example${path}` },
    { how: 'absolute-form, percent-encoded', path: `http://evil.example${all}` },
  );
  return out;
}

interface Caller {
  name: string;
  headers: Record<string, string>;
}

describe('authorization matrix, generated from the route table', () => {
  let svc: TestService;
  let base: URL;
  let mine: TestProject;
  let theirs: TestProject;
  let myLink: string;
  let theirLink: string;
  let revokedLink: string;
  let table: readonly RouteAccess[];

  beforeAll(async () => {
    svc = await startTestService({ env: { AUTH_RATE_LIMIT_SSO: 'off', AUTH_RATE_LIMIT_TOKEN: 'off', SSO_SETUP_RATE_LIMIT: 'off' } });
    base = new URL(svc.url);
    mine = await svc.project('enterprise');
    theirs = await svc.project('enterprise');
    const link = async (p: TestProject, domain: string) => {
      const r = await svc.api(p.ownerToken, 'POST', `/v1/projects/${p.ref}/auth/sso/setup-links`, { domains: [domain] });
      expect(r.status).toBe(201);
      return r.body as { id: string; url: string };
    };
    const secretOf = (l: { url: string }) => new URL(l.url).hash.slice(1);
    myLink = secretOf(await link(mine, `${mine.ref}.test`));
    theirLink = secretOf(await link(theirs, `${theirs.ref}.test`));
    const revoked = await link(mine, `revoked.${mine.ref}.test`);
    revokedLink = secretOf(revoked);
    expect((await svc.api(mine.ownerToken, 'DELETE', `/v1/projects/${mine.ref}/auth/sso/setup-links/${revoked.id}`)).status).toBe(200);
    table = routeAccessTable(svc.app);
  });
  afterAll(async () => {
    agent.destroy();
    await svc?.stop();
  });

  /** The callers the access kind accepts, and every other one. */
  function callers(access: RouteAccess['access']): { right: Caller[]; wrong: Caller[] } {
    const owner = (t: string) => ({ authorization: `Bearer ${t}` });
    const all: Record<string, Caller> = {
      none: { name: 'no credential', headers: {} },
      garbage: { name: 'garbage credentials', headers: { authorization: 'Bearer own_garbage-garbage-garbage-garbage', apikey: 'anon_garbage' } },
      otherOwner: { name: "another owner's token", headers: owner(theirs.ownerToken) },
      anonKey: { name: "the project's anon key (header and bearer)", headers: { apikey: mine.anonKey, authorization: `Bearer ${mine.anonKey}` } },
      otherAnonKey: { name: "another project's anon key", headers: { apikey: theirs.anonKey } },
      otherLink: { name: 'a setup link of another project', headers: owner(theirLink) },
      revokedLink: { name: 'a revoked setup link of this project', headers: owner(revokedLink) },
      myLink: { name: "this project's setup link", headers: owner(myLink) },
      rightOwner: { name: "the project's owner", headers: owner(mine.ownerToken) },
    };
    const right: Record<RouteAccess['access'], string[]> = {
      public: Object.keys(all),
      owner: ['rightOwner', 'otherOwner'], // each owner lists their own projects
      'project-owner': ['rightOwner'],
      'api-key': ['anonKey'],
      // the routes take no ref: a link reaches its own project only, whichever project that is
      'setup-link': ['myLink', 'otherLink'],
    };
    return {
      right: right[access].map((k) => all[k]),
      wrong: Object.keys(all).filter((k) => !right[access].includes(k)).map((k) => all[k]),
    };
  }

  /** A fingerprint of everything a request could change: every control-database table, and the project's database objects. */
  async function state(): Promise<Record<string, string>> {
    const control = dbUrl(svc.controlDb);
    const tables = (await sql(control, "select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE' order by 1")).rows.map((r) => r.table_name as string);
    const out: Record<string, string> = {};
    // an owner token's last_used_at moves whenever it is presented, refused or not: not a change
    const row = (t: string) => (t === 'owner_tokens' ? "(to_jsonb(x) - 'last_used_at')::text" : 'x::text');
    for (const t of tables) out[t] = (await sql(control, `select md5(coalesce(string_agg(${row(t)}, '|' order by ${row(t)}), '')) as h from "${t}" x`)).rows[0].h;
    out['project database objects'] = (await sql(mine.databaseUrl, "select md5(coalesce(string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text, ',' order by 1), '')) as h from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname not in ('pg_catalog', 'information_schema', 'pg_toast')")).rows[0].h;
    out['project database triggers'] = (await sql(mine.databaseUrl, "select md5(coalesce(string_agg(tgname, ',' order by 1), '')) as h from pg_trigger where not tgisinternal")).rows[0].h;
    return out;
  }

  it('covers every route the service registers, and every route declares its access', () => {
    expect(table.length).toBeGreaterThan(50);
    // the ones everybody knows must be there, so an empty or partial table cannot pass
    for (const k of ['GET /v1/projects', 'PATCH /v1/projects/:ref', 'PUT /v1/projects/:ref/secrets/:name', 'GET /v1/projects/:ref/audit', 'POST /projects/:ref/auth/v1/token', 'PUT /v1/sso-setup/provider']) {
      expect(table.map(keyOf)).toContain(k);
    }
  });

  it('a route registered without a declaration stops the start (deny by default)', async () => {
    const deny = async () => {
      throw new Error('unreachable');
    };
    const make = () => buildServer({ logger: createLogger('silent'), publicUrl: 'http://127.0.0.1', access: { owner: deny, 'project-owner': deny, 'api-key': deny, 'setup-link': deny } });
    const undeclared = async () => {
      const app = await make();
      app.get('/v1/projects/:ref/new-feature', async () => ({ secret: true }));
      await app.ready();
    };
    await expect(undeclared()).rejects.toThrow(/GET \/v1\/projects\/:ref\/new-feature declares no access/);
    const inconsistent = async () => {
      const app = await make();
      app.get('/v1/things', { config: { access: 'project-owner' } }, async () => ({}));
      await app.ready();
    };
    await expect(inconsistent()).rejects.toThrow(/no :ref parameter/);
    // a declared one is fine, and its guard runs before the handler
    const app = await make();
    app.get('/v1/projects/:ref/new-feature', { config: { access: 'project-owner' } }, async () => ({ secret: true }));
    const res = await app.inject({ method: 'GET', url: '/%76%31/projects/abc/new-feature' });
    expect(res.statusCode).toBe(500); // the stand-in check above threw: the handler never ran
    expect(res.body).not.toContain('secret');
    await app.close();
  });

  it('public routes are exactly the reviewed list', () => {
    const pub = table.filter((r) => r.access === 'public').map(keyOf).filter((k) => !k.startsWith('HEAD '));
    const unreviewed = pub.filter((k) => !(k in PUBLIC_ROUTES));
    expect(unreviewed, 'routes declared public that nobody reviewed: add them to PUBLIC_ROUTES with a reason, or declare who may call them').toEqual([]);
  });

  it('each area keeps its kind of caller: /v1/projects/{ref} is the owner’s, /projects/{ref}/auth/v1 the API key’s, /v1/sso-setup the link holder’s', () => {
    const misplaced = table
      .filter((r) => !(keyOf(r) in PUBLIC_ROUTES) && !(r.method === 'HEAD' && `GET ${r.url}` in PUBLIC_ROUTES))
      .filter((r) =>
        r.url.startsWith('/v1/projects/:ref') ? r.access !== 'project-owner'
        : r.url === '/v1/projects' ? r.access !== 'owner'
        : r.url.startsWith('/projects/:ref/auth/v1') ? r.access !== 'api-key'
        : r.url.startsWith('/v1/sso-setup') ? r.access !== 'setup-link'
        : r.access === 'public',
      )
      .map((r) => `${keyOf(r)} (${r.access})`);
    expect(misplaced).toEqual([]);
  });

  it('the requests of the report are refused and change nothing', async () => {
    const before = await state();
    const ref = mine.ref;
    const answers = [
      await send(base, 'GET', `/%76%31/projects/${ref}/secrets`, {}),
      await send(base, 'PATCH', `/%76%31/projects/${ref}`, {}, JSON.stringify({ allow_linking: true })),
      await send(base, 'PUT', `/%76%31/projects/${ref}/secrets/X`, {}, JSON.stringify({ value: 'y' })),
      await send(base, 'GET', `http://x/v1/projects/${ref}/audit`, {}),
      await send(base, 'GET', `/%76%31/projects/${ref}`, {}),
      await send(base, 'POST', `/%76%31/projects/${ref}/webhooks`, {}, JSON.stringify({ name: 'steal', table: 'public.t', events: ['INSERT'], url: 'http://127.0.0.1:1/' })),
    ];
    for (const a of answers) expect([a.status, a.code]).toEqual([401, 'unauthorized']);
    expect(await state()).toEqual(before);
  });

  it('every route × every wrong caller × every spelling is refused and changes nothing; the right caller gets through', async () => {
    const before = await state();
    const failures: string[] = [];
    let requests = 0;
    const jobs: Array<() => Promise<void>> = [];
    for (const r of table) {
      const { right, wrong } = callers(r.access);
      const path = fill(r.url, mine.ref);
      const bodyFor = (m: string) => (['POST', 'PUT', 'PATCH'].includes(m) ? JSON.stringify({ __matrix: true }) : undefined);
      const label = `${r.method} ${r.url} [${r.access}]`;
      if (r.access === 'public') {
        // anyone may call these: whatever the caller or spelling, never a 5xx
        for (const c of wrong.concat(right).slice(0, 3)) {
          for (const s of [{ how: 'canonical', path }, ...spellings(path)]) {
            jobs.push(async () => {
              const a = await send(base, r.method, s.path, c.headers, bodyFor(r.method));
              requests++;
              if (a.status >= 500) failures.push(`${label} ${c.name}, ${s.how} (${s.path}): ${a.status} ${a.body}`);
            });
          }
        }
        continue;
      }
      for (const c of wrong) {
        for (const s of [{ how: 'canonical', path }, ...spellings(path)]) {
          jobs.push(async () => {
            // a body that would pass no validation: a 400 validation_failed would mean it was looked at
            const a = await send(base, r.method, s.path, c.headers, bodyFor(r.method));
            requests++;
            const okCode = r.method === 'HEAD' ? a.code === undefined : a.code !== undefined && WRONG_OK_CODES.has(a.code);
            if (!WRONG_OK_STATUS.has(a.status) || !okCode) failures.push(`${label} ${c.name}, ${s.how} (${s.path}): ${a.status} ${a.code ?? a.body}`);
          });
        }
      }
    }
    await pool(jobs, 8, (j) => j());
    console.log(`[access-matrix] ${table.length} routes, ${requests} refused-caller requests`);
    expect(failures.slice(0, 40), `${failures.length} requests were not refused`).toEqual([]);
    expect(await state(), 'a refused request changed something').toEqual(before);

    // the right caller, canonical path: through the guard (what the route then says is its own business)
    const through: string[] = [];
    for (const r of table.filter((x) => x.access !== 'public')) {
      const path = fill(r.url, mine.ref);
      for (const c of callers(r.access).right) {
        const body = ['POST', 'PUT', 'PATCH'].includes(r.method) ? JSON.stringify({ __matrix: true }) : undefined;
        const a = await send(base, r.method, path, c.headers, body);
        // past the guard: no refusal of this route's kind, and the router found the route
        const refused = a.code !== undefined && (REFUSED_BY[r.access].includes(a.code) || a.body.includes('No route for'));
        if (a.status >= 500 || (a.status >= 300 && a.status < 400) || refused) through.push(`${r.method} ${r.url} [${r.access}] ${c.name}: ${a.status} ${a.code ?? a.body}`);
      }
    }
    expect(through).toEqual([]);
  }, 300_000);
});
