// Every operation of /openapi.json against malformed input, so a route added later is covered
// without anyone remembering to (routes hidden from the document - the dashboard's files, CORS
// preflight, the document itself - are listed by hand below): path parameters (NUL, overlong, odd unicode, traversal, SQL-ish,
// broken percent-encoding), bodies (empty, invalid, wrong JSON types, huge, deep) and content
// types, with each kind of credential (the owner's, another owner's, malformed, none). No answer
// may be a 5xx or carry internal detail, and every 4xx is {code, message} JSON.
//
// Also here, because the sweep found its absence: an empty body sent as application/json is no
// body, wherever a body is optional.
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

const LEAKS = [/"devDependencies"/, /BEGIN (RSA |EC )?PRIVATE KEY/, /\bat \S+ \(/, /\/src\//, /node_modules/, /invalid byte sequence/i, /syntax error at/i, /\brelation "/i, /ECONNREFUSED/, /duplicate key/i, /violates/i, /\b(TypeError|ReferenceError|RangeError)\b/, /\bpg_\w+\(/];

const BAD_PARAMS = ['%00', 'a%00b', 'x'.repeat(300), '%C0%AF', '..', '%2e%2e%2f', "'%3B%20drop%20table%20projects%3B--", '%F0%9F%98%80', '-1', '1e309', '%ZZ', '%E2%80%AE', 'null', '00000000-0000-0000-0000-00000000000g'];

interface Answer {
  label: string;
  status: number;
  type: string;
  body: string;
}

describe('OpenAPI sweep: every operation × malformed input', () => {
  let svc: TestService;
  let mine: TestProject;
  let theirs: TestProject;
  let ops: { method: string; path: string; hasBody: boolean }[] = [];
  const answers: Answer[] = [];

  beforeAll(async () => {
    svc = await startTestService({ roles: ['api'] });
    mine = await svc.project('enterprise');
    theirs = await svc.project('enterprise');
    const doc = (await svc.api(null, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, { requestBody?: unknown }>> };
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        ops.push({ method: method.toUpperCase(), path, hasBody: !!op.requestBody || ['post', 'put', 'patch'].includes(method) });
      }
    }
  });

  afterAll(async () => svc?.stop());

  /** A concrete path: `bad` in parameter `badIndex` (or none), valid-looking values elsewhere. */
  const fill = (template: string, badIndex: number, bad: string) => {
    let i = 0;
    return template.replace(/\{(\w+)\}/g, (_m, name: string) => {
      const v = i++ === badIndex ? bad : name === 'ref' ? mine.ref : name === 'name' ? 'SOME_SECRET' : randomUUID();
      return v;
    });
  };

  const creds = () => ({
    owner: { authorization: `Bearer ${mine.ownerToken}`, apikey: mine.anonKey },
    other: { authorization: `Bearer ${theirs.ownerToken}`, apikey: theirs.anonKey },
    malformed: { authorization: 'Bearer own_not-a-token\u00ff', apikey: 'anon_x' },
    none: {} as Record<string, string>,
  });

  // undici's request, not fetch: fetch refuses a body on GET, and a client sending one is exactly the point
  async function send(label: string, method: string, path: string, headers: Record<string, string>, body?: string | Buffer) {
    try {
      const res = await request(`${svc.url}${path}`, { method: method as 'GET', headers, body });
      const type = String(res.headers['content-type'] ?? '');
      answers.push({ label, status: res.statusCode, type, body: await res.body.text() });
    } catch (e) {
      // the server closing a connection on purpose (malformed HTTP) is an answer too; it is listed
      answers.push({ label, status: 599, type: '', body: String((e as Error).message) });
    }
  }

  async function pool<T>(items: T[], n: number, fn: (t: T) => Promise<void>) {
    let next = 0;
    await Promise.all(Array.from({ length: n }, async () => {
      while (next < items.length) await fn(items[next++]);
    }));
  }

  it('covers the whole document', () => {
    expect(ops.length).toBeGreaterThan(40);
    for (const must of ['/v1/projects/{ref}/webhooks', '/projects/{ref}/auth/v1/sso/saml/acs/{providerId}', '/projects/{ref}/auth/v1/token']) {
      expect(ops.some((o) => o.path === must), must).toBe(true);
    }
  });

  it('no 5xx, no internal detail, every 4xx is {code, message}', async () => {
    const jobs: (() => Promise<void>)[] = [];
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const bodies: [string, Record<string, string>, string | Buffer | undefined][] = [
      ['no body', {}, undefined],
      ['empty json', { 'content-type': 'application/json' }, ''],
      ['broken json', { 'content-type': 'application/json' }, '{"a":'],
      ['array', { 'content-type': 'application/json' }, '[]'],
      ['string', { 'content-type': 'application/json' }, '"x"'],
      ['null', { 'content-type': 'application/json' }, 'null'],
      ['number', { 'content-type': 'application/json' }, '1e309'],
      ['wrong types', { 'content-type': 'application/json' }, JSON.stringify({ name: 1, url: [], table: {}, events: 'INSERT', domains: 'x', kind: 7, email: null, enabled: 'yes' })],
      ['nul in strings', { 'content-type': 'application/json' }, JSON.stringify({ name: 'a\u0000b', url: 'http://x\u0000', email: 'a\u0000@b.c', site_url: '\u0000', value: '\ud800' })],
      ['proto', { 'content-type': 'application/json' }, '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}'],
      ['deep', { 'content-type': 'application/json' }, deep],
      ['huge', { 'content-type': 'application/json' }, Buffer.alloc(3 * 1024 * 1024, 'a')],
      ['text', { 'content-type': 'text/plain' }, 'hello'],
      ['form', { 'content-type': 'application/x-www-form-urlencoded' }, 'a=b&SAMLResponse=%00&RelayState=x'],
      ['multipart', { 'content-type': 'multipart/form-data; boundary=x' }, '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n'],
      ['bad charset', { 'content-type': 'application/json; charset=utf-7' }, '{}'],
    ];
    for (const op of ops) {
      const params = (op.path.match(/\{\w+\}/g) ?? []).length;
      for (const [who, h] of Object.entries(creds())) {
        // malformed path parameters, one at a time
        for (let i = 0; i < params; i++) {
          for (const bad of BAD_PARAMS) {
            const path = fill(op.path, i, bad);
            jobs.push(() => send(`${op.method} ${path} [${who}]`, op.method, path, h));
          }
        }
        // malformed bodies and content types on a well-formed path
        if (op.hasBody) {
          for (const [label, ct, body] of bodies) {
            const path = fill(op.path, -1, '');
            jobs.push(() => send(`${op.method} ${op.path} body=${label} [${who}]`, op.method, path, { ...h, ...ct }, body));
          }
        } else {
          const path = fill(op.path, -1, '');
          jobs.push(() => send(`${op.method} ${op.path} [${who}]`, op.method, path, h));
          jobs.push(() => send(`${op.method} ${op.path} body=unexpected [${who}]`, op.method, path, { ...h, 'content-type': 'application/json' }, '{"unexpected":true}'));
        }
        // query strings nobody declared
        const path = fill(op.path, -1, '');
        jobs.push(() => send(`${op.method} ${op.path}?odd [${who}]`, op.method, `${path}?limit=%00&page=-1&x[]=1&__proto__=1`, h));
      }
    }
    // routes the document hides (schema.hide): the document itself, the dashboard's files, CORS preflight
    for (const bad of BAD_PARAMS) {
      jobs.push(() => send(`GET /dashboard/${bad}`, 'GET', `/dashboard/${bad}`, {}));
      jobs.push(() => send(`GET /dashboard/assets/${bad}`, 'GET', `/dashboard/assets/${bad}`, {}));
      jobs.push(() => send(`OPTIONS /projects/${bad}/auth/v1/sso`, 'OPTIONS', `/projects/${bad}/auth/v1/sso`, { origin: 'https://x.example', 'access-control-request-method': 'POST' }));
    }
    jobs.push(() => send('GET /openapi.json?x=%00', 'GET', '/openapi.json?x=%00', {}));
    jobs.push(() => send('GET /dashboard/..%2f..%2fpackage.json', 'GET', '/dashboard/..%2f..%2fpackage.json', {}));
    await pool(jobs, 12, (j) => j());
    console.log(`[openapi-sweep] ${ops.length} operations, ${answers.length} requests`);

    const failures = answers.filter((a) => {
      if (a.status >= 500) return true;
      if (LEAKS.some((re) => re.test(a.body))) return true;
      if (a.status >= 400) {
        if (!a.type.includes('application/json')) return true;
        try {
          const b = JSON.parse(a.body);
          return typeof b.code !== 'string' || typeof b.message !== 'string';
        } catch {
          return true;
        }
      }
      return false;
    });
    expect(failures.map((f) => `${f.label} -> ${f.status} ${f.type} ${f.body.slice(0, 200)}`)).toEqual([]);
  }, 600_000);
});

describe('an empty JSON body is no body', () => {
  let svc: TestService;
  let p: TestProject;
  beforeAll(async () => {
    svc = await startTestService({ roles: ['api'] });
    p = await svc.project('enterprise');
  });
  afterAll(async () => svc?.stop());

  const post = (path: string, headers: Record<string, string>, body?: string) =>
    fetch(`${svc.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${p.ownerToken}`, ...headers }, body }).then(async (r) => ({ status: r.status, body: await r.json() }));

  it('where the body is optional: answered as without one (curl -H content-type:application/json, no -d)', async () => {
    const path = `/v1/projects/${p.ref}/outbox/deliveries/${randomUUID()}/retry`;
    const without = await post(path, {});
    const empty = await post(path, { 'content-type': 'application/json' }, '');
    expect(without).toEqual({ status: 404, body: expect.objectContaining({ code: 'delivery_not_found' }) });
    expect(empty).toEqual(without);
    const rotate = await post(`/v1/projects/${p.ref}/auth/signing-keys/rotate`, { 'content-type': 'application/json' }, '');
    expect(rotate.status).toBe(200);
  });

  it('where a body is required: validation_failed, not invalid_json; broken JSON is still invalid_json', async () => {
    const empty = await post(`/v1/projects/${p.ref}/webhooks`, { 'content-type': 'application/json' }, '');
    expect(empty.status).toBe(400);
    expect(empty.body).toMatchObject({ code: 'validation_failed' });
    const broken = await post(`/v1/projects/${p.ref}/webhooks`, { 'content-type': 'application/json' }, '{"table":');
    expect(broken).toEqual({ status: 400, body: expect.objectContaining({ code: 'invalid_json' }) });
    const proto = await post(`/v1/projects/${p.ref}/webhooks`, { 'content-type': 'application/json' }, '{"__proto__":{"x":1}}');
    expect(proto.status).toBe(400);
  });
});
