// Property-based fuzzing of the Management API with fast-check: each generated request starts from
// a valid call of some route and breaks exactly one thing (JSON syntax, a field's type, an unknown
// field, a huge string, a control character, the ref, the id or name, the method, the credentials, the content type or
// the header size). Every one must be answered with a 4xx and a JSON {code, message} from the
// error catalogue: never a 5xx, never a success, never another body shape.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import pg from 'pg';
import { catalogue } from '../../src/errors.js';
import { badChar, insertAt, oddString as oddStringOf, wrongFor, type Req } from '../helpers/fuzz.js';
import { startTestService, type TestService, type TestProject } from '../helpers/service.js';

interface Route {
  method: string;
  path: string; // {ref}, {id}, {name} are filled in
  body?: Record<string, unknown>;
  query?: Record<string, string>;
}

const ROUTES: Route[] = [
  { method: 'GET', path: '/v1/projects' },
  { method: 'GET', path: '/v1/projects/{ref}' },
  { method: 'PATCH', path: '/v1/projects/{ref}', body: { site_url: 'https://app.example.com', disable_signup: false } },
  { method: 'POST', path: '/v1/projects/{ref}/outbox/enable' },
  { method: 'POST', path: '/v1/projects/{ref}/webhooks', body: { name: 'n', table: 'public.orders', events: ['INSERT'], url: 'https://example.com/h', headers: { 'x-a': 'b' }, timeout_ms: 5000 } },
  { method: 'GET', path: '/v1/projects/{ref}/webhooks' },
  { method: 'GET', path: '/v1/projects/{ref}/webhooks/{id}' },
  { method: 'PATCH', path: '/v1/projects/{ref}/webhooks/{id}', body: { name: 'renamed', rotate_secret: true } },
  { method: 'DELETE', path: '/v1/projects/{ref}/webhooks/{id}' },
  { method: 'PUT', path: '/v1/projects/{ref}/secrets/{name}', body: { value: 'v' } },
  { method: 'GET', path: '/v1/projects/{ref}/secrets' },
  { method: 'DELETE', path: '/v1/projects/{ref}/secrets/{name}' },
  { method: 'PUT', path: '/v1/projects/{ref}/smtp', body: { host: 'smtp.example.com', port: 587, sender_email: 'a@example.com', tls_mode: 'starttls' } },
  { method: 'GET', path: '/v1/projects/{ref}/smtp' },
  { method: 'DELETE', path: '/v1/projects/{ref}/smtp' },
  { method: 'GET', path: '/v1/projects/{ref}/audit', query: { limit: '10' } },
  { method: 'GET', path: '/v1/projects/{ref}/auth/signing-keys' },
  { method: 'POST', path: '/v1/projects/{ref}/auth/signing-keys/rotate' },
  { method: 'GET', path: '/v1/projects/{ref}/auth/providers/sso' },
  { method: 'GET', path: '/v1/projects/{ref}/auth/users', query: { page: '1' } },
  { method: 'POST', path: '/v1/projects/{ref}/auth/users', body: { email: 'fuzz@example.com', email_confirm: true } },
  { method: 'GET', path: '/v1/projects/{ref}/outbox/deliveries', query: { limit: '10', status: 'dead' } },
  { method: 'GET', path: '/v1/projects/{ref}/outbox/deliveries/{id}' },
  { method: 'POST', path: '/v1/projects/{ref}/outbox/deliveries/{id}/retry' },
  { method: 'POST', path: '/v1/projects/{ref}/outbox/replay', body: { status: 'dead', host: 'example.com' } },
];

const methodsFor = (path: string) => new Set(ROUTES.filter((r) => r.path === path).flatMap((r) => (r.method === 'GET' ? ['GET', 'HEAD'] : [r.method])));

const oddString = oddStringOf(['\u0000', '%00', '../..', '%2e%2e', '{{secret:X}}', '__proto__', 'constructor', ' ', '\t', '"', '\\', 'null', '-1', '1e309']);
const hugeString = fc.tuple(fc.integer({ min: 16_385, max: 70_000 }), fc.constantFrom('x', 'é', '\u0001', '𝕏', '<', '%')).map(([n, c]) => c.repeat(Math.ceil(n / c.length)));
const randomUuid = fc.uuid({ version: 4 });

describe('Management API fuzz: malformed requests get a 4xx JSON error, never a 5xx', () => {
  let svc: TestService;
  let p: TestProject;
  let other: TestProject;
  let webhookId: string;
  let auditBefore: number;
  const auditCount = async () => (await svc.ctx.db.query('select count(*)::int as n from audit_log')).rows[0].n as number;

  beforeAll(async () => {
    svc = await startTestService();
    p = await svc.project('pro');
    other = await svc.project('enterprise');
    // The table and a webhook exist, so a request broken in one place only gets past every other
    // check and reaches the code that writes.
    const db = new pg.Client({ connectionString: p.databaseUrl });
    await db.connect();
    await db.query('create table public.orders (id serial primary key)');
    await db.end();
    const w = await svc.api(p.ownerToken, 'POST', `/v1/projects/${p.ref}/webhooks`, { table: 'public.orders', events: ['INSERT'], url: 'https://example.com/h' });
    expect(w.status).toBe(201);
    webhookId = w.body.id;
    auditBefore = await auditCount();
  });
  afterAll(async () => svc?.stop());

  function request(ownerToken: string, ownRef: string, otherToken: string, otherRef: string) {
    const fill = (path: string, ref = ownRef, id = webhookId, name = 'FUZZ_NAME') =>
      path.replace('{ref}', ref).replace('{id}', id).replace('{name}', name);
    const auth = { authorization: `Bearer ${ownerToken}` };
    const json = { ...auth, 'content-type': 'application/json' };
    const base = (r: Route, extra: Partial<Req> = {}): Req => ({
      kind: '',
      method: r.method,
      path: fill(r.path) + (r.query ? `?${new URLSearchParams(r.query)}` : ''),
      headers: r.body ? json : auth,
      body: r.body ? JSON.stringify(r.body) : undefined,
      ...extra,
    });
    const withQuery = (r: Route, q: Record<string, string>) => `${fill(r.path)}?${new URLSearchParams({ ...r.query, ...q })}`;
    const route = fc.constantFrom(...ROUTES);
    const notGet = fc.constantFrom(...ROUTES.filter((r) => r.method !== 'GET'));
    const withBody = fc.constantFrom(...ROUTES.filter((r) => r.body));
    const noBodyNotGet = fc.constantFrom(...ROUTES.filter((r) => !r.body && r.method !== 'GET'));
    const gets = fc.constantFrom(...ROUTES.filter((r) => r.method === 'GET'));
    const field = (r: Route) => fc.constantFrom(...Object.keys(r.body!));
    const tag = (kind: string) => (q: Req) => ({ ...q, kind });

    const badJson = fc
      .tuple(notGet, fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('{', '{"a":1,}', "{'a':1}", '{"value": "v"', 'NaN', '[1,]', '{"a":1}{', '\u0000', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}')))
      // an empty (or blank) body is no body by design (src/http/server.ts), not bad JSON
      .filter(([, text]) => text.trim() !== '')
      .filter(([, text]) => {
        try {
          JSON.parse(text);
          return text.includes('__proto__') || text.includes('constructor');
        } catch {
          return true;
        }
      })
      .map(([r, text]) => base(r, { headers: json, body: text }))
      .map(tag('bad JSON'));

    const wrongType = fc.oneof(
      withBody.chain((r) => field(r).chain((k) => wrongFor(r.body![k]).map((v) => base(r, { body: JSON.stringify({ ...r.body, [k]: v }) })))),
      fc.tuple(noBodyNotGet, fc.oneof(fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { minKeys: 1, maxKeys: 3 }), fc.array(fc.jsonValue({ maxDepth: 1 })), fc.constantFrom(null, 1, 'x', true))).map(([r, v]) => base(r, { headers: json, body: JSON.stringify(v) })),
      fc
        .tuple(fc.constant(ROUTES.find((r) => r.path.endsWith('/audit'))!), fc.constantFrom('limit', 'before'), fc.oneof(oddString, fc.constantFrom('0', '101', '-5', '1.5', '99999999999999999999', 'abc')))
        .filter(([, k, v]) => !(k === 'limit' ? /^(?:[1-9][0-9]?|100)$/ : /^[1-9][0-9]{0,17}$/).test(v))
        .map(([r, k, v]) => base(r, { path: withQuery(r, { [k]: v }) })),
    ).map(tag('wrong type'));

    const unknownKey = fc.string({ minLength: 1, maxLength: 20 });
    const unknownField = fc.oneof(
      withBody.chain((r) => unknownKey.filter((k) => !(k in r.body!) && !['name', 'table', 'events', 'url', 'headers', 'timeout_ms', 'enabled', 'rotate_secret', 'value', 'host', 'port', 'user', 'password', 'sender_email', 'sender_name', 'tls_mode', 'site_url', 'additional_redirect_urls', 'disable_signup', 'allow_linking', 'email', 'email_confirm', 'status', 'since', 'until', 'webhook_id'].includes(k)).chain((k) => fc.jsonValue({ maxDepth: 1 }).map((v) => base(r, { body: JSON.stringify({ ...r.body, [k]: v }) })))),
      fc.tuple(gets, unknownKey.filter((k) => !['limit', 'before', 'status', 'kind', 'cursor', 'page', 'per_page'].includes(k)), oddString).map(([r, k, v]) => base(r, { path: withQuery(r, { [k]: v }) })),
    ).map(tag('unknown field'));

    const huge = fc.oneof(
      withBody.chain((r) => fc.tuple(field(r), hugeString).map(([k, s]) => base(r, { body: JSON.stringify({ ...r.body, [k]: s }) }))),
      fc.tuple(route.filter((r) => r.path.includes('{ref}')), hugeString).map(([r, s]) => base(r, { path: fill(r.path, encodeURIComponent(s.slice(0, 4000))) })),
      fc.tuple(route, fc.integer({ min: 17_000, max: 40_000 })).map(([r, n]) => base(r, { headers: { ...(r.body ? json : auth), 'x-padding': 'p'.repeat(n) } })),
    ).map(tag('huge'));

    // A control character or an unpaired surrogate inside a text field (Postgres text cannot hold
    // NUL, jsonb refuses lone surrogates, CR/LF would inject headers). Secret values are exempt.
    const textField = (r: Route) => Object.keys(r.body ?? {}).filter((k) => typeof r.body![k] === 'string' && k !== 'value');
    const badText = fc
      .constantFrom(...ROUTES.filter((r) => textField(r).length > 0))
      .chain((r) =>
        fc.tuple(fc.constantFrom(...textField(r)), badChar, fc.nat()).map(([k, bad, at]) => base(r, { body: JSON.stringify({ ...r.body, [k]: insertAt(r.body![k] as string, bad, at) }) })),
      )
      .map(tag('bad text'));

    const badRef = fc
      .tuple(route.filter((r) => r.path.includes('{ref}')), fc.oneof(oddString, fc.constant(otherRef), fc.stringMatching(/^[a-z][a-z0-9-]{2,39}$/)))
      .filter(([, ref]) => ref !== ownRef && ref !== '' && ref !== '.' && ref !== '..')
      .map(([r, ref]) => base(r, { path: fill(r.path, encodeURIComponent(ref)) }))
      .map(tag('bad ref'));

    const badId = fc.oneof(
      fc.tuple(fc.constantFrom(...ROUTES.filter((r) => r.path.includes('{id}'))), fc.oneof(oddString, randomUuid)).filter(([, id]) => id !== '' && id !== '.' && id !== '..').map(([r, id]) => base(r, { path: fill(r.path, ownRef, encodeURIComponent(id)) })),
      fc.tuple(fc.constantFrom(...ROUTES.filter((r) => r.path.includes('{name}'))), oddString.filter((n) => n !== '' && n !== '.' && n !== '..' && !/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(n))).map(([r, n]) => base(r, { path: fill(r.path, ownRef, undefined, encodeURIComponent(n)) })),
      fc.tuple(fc.constant(ROUTES.find((r) => r.method === 'DELETE' && r.path.includes('{name}'))!), fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,20}$/)).map(([r, n]) => base(r, { path: fill(r.path, ownRef, undefined, `NOPE_${n}`) })),
    ).map(tag('bad id'));

    const badMethod = fc
      .tuple(route, fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND', 'SEARCH', 'FOO', 'patch'))
      .filter(([r, m]) => !methodsFor(r.path).has(m))
      .map(([r, m]) => base(r, { method: m, body: m === 'GET' ? undefined : base(r).body }))
      .map(tag('bad method'));

    const badAuth = fc
      .tuple(
        route,
        fc.oneof(
          fc.constant(undefined),
          fc.constantFrom('Bearer', 'Bearer ', 'Basic YTpi', `bearer  ${ownerToken.slice(0, -1)}`, `Bearer ${ownerToken}x`, `Token ${ownerToken}`, `Bearer ${ownerToken} ${ownerToken}`),
          oddString.filter((s) => /^[\t\x20-\x7e]*$/.test(s)).map((s) => `Bearer ${s}`),
        ),
      )
      .map(([r, a]) => {
        const q = base(r);
        const { authorization: _, ...rest } = q.headers;
        return { ...q, headers: a === undefined ? rest : { ...rest, authorization: a } };
      })
      .map(tag('bad credentials'));

    // Another owner's valid token on this project: as unknown to them as a missing one.
    const foreign = route
      .filter((r) => r.path.includes('{ref}'))
      .map((r) => ({ ...base(r), headers: { ...base(r).headers, authorization: `Bearer ${otherToken}` } }))
      .map(tag('other owner'));

    const badContentType = fc
      .tuple(withBody, fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json-patch+json', 'application/jsonx', 'application/octet-stream', 'json', '*/*', 'text/json'))
      .map(([r, ct]) => base(r, { headers: { ...auth, 'content-type': ct } }))
      .map(tag('bad content type'));

    return fc.oneof(badJson, wrongType, unknownField, huge, badText, badRef, badId, badMethod, badAuth, foreign, badContentType);
  }

  it('answers at least 1000 malformed requests with 4xx {code, message}', async () => {
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(request(p.ownerToken, p.ref, other.ownerToken, other.ref), async (q) => {
        seen.set(q.kind, (seen.get(q.kind) ?? 0) + 1);
        const res = await fetch(`${svc.url}${q.path}`, { method: q.method, headers: q.headers, body: q.body });
        const text = await res.text();
        const where = `${q.kind}: ${q.method} ${q.path.slice(0, 200)} -> ${res.status} ${text.slice(0, 200)}`;
        expect(res.status, where).toBeGreaterThanOrEqual(400);
        expect(res.status, where).toBeLessThan(500);
        expect(res.headers.get('content-type'), where).toMatch(/^application\/json/);
        const body = JSON.parse(text);
        expect(Object.keys(body).sort(), where).toEqual(['code', 'message']);
        expect(Object.keys(catalogue), where).toContain(body.code);
        expect(typeof body.message, where).toBe('string');
      }),
      { numRuns: 1200 },
    );
    expect([...seen.values()].reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1000);
    expect(seen.size).toBe(11);
    // nothing malformed changed anything
    expect(await auditCount()).toBe(auditBefore);
  });
});
