// The authorization matrix of every Management API route (no token, malformed header, unknown
// token, revoked token, another owner's token, the owner's token) and the plan rule for SMTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueOwnerToken, revokeOwnerToken, setPlan } from '../../src/projects/index.js';
import { startTestService, type TestService, type TestProject } from '../helpers/service.js';

const NO_WEBHOOK = '00000000-0000-4000-8000-000000000000';

interface Route {
  method: string;
  path: (ref: string) => string;
  body?: unknown;
  /** what the owner gets: it passed the guard and reached the route */
  owner: [number, string | null];
}

// Bodies are deliberately invalid where a valid one would change state, so the owner's row shows
// the guard let the request through to validation or to the handler.
const routes: Route[] = [
  { method: 'GET', path: (r) => `/v1/projects/${r}`, owner: [200, null] },
  { method: 'PATCH', path: (r) => `/v1/projects/${r}`, body: {}, owner: [400, 'validation_failed'] },
  { method: 'POST', path: (r) => `/v1/projects/${r}/webhooks`, body: { table: 'public.x' }, owner: [400, 'validation_failed'] },
  { method: 'GET', path: (r) => `/v1/projects/${r}/webhooks`, owner: [200, null] },
  { method: 'GET', path: (r) => `/v1/projects/${r}/webhooks/${NO_WEBHOOK}`, owner: [404, 'webhook_not_found'] },
  { method: 'PATCH', path: (r) => `/v1/projects/${r}/webhooks/${NO_WEBHOOK}`, body: { name: 'n' }, owner: [404, 'webhook_not_found'] },
  { method: 'DELETE', path: (r) => `/v1/projects/${r}/webhooks/${NO_WEBHOOK}`, owner: [404, 'webhook_not_found'] },
  { method: 'PUT', path: (r) => `/v1/projects/${r}/secrets/API_KEY`, body: { value: 1 }, owner: [400, 'validation_failed'] },
  { method: 'GET', path: (r) => `/v1/projects/${r}/secrets`, owner: [200, null] },
  { method: 'DELETE', path: (r) => `/v1/projects/${r}/secrets/API_KEY`, owner: [404, 'secret_not_found'] },
  { method: 'PUT', path: (r) => `/v1/projects/${r}/smtp`, body: { host: 'smtp.example.com' }, owner: [400, 'validation_failed'] },
  { method: 'GET', path: (r) => `/v1/projects/${r}/smtp`, owner: [404, 'smtp_not_configured'] },
  { method: 'DELETE', path: (r) => `/v1/projects/${r}/smtp`, owner: [404, 'smtp_not_configured'] },
  { method: 'GET', path: (r) => `/v1/projects/${r}/audit`, owner: [200, null] },
  { method: 'POST', path: (r) => `/v1/projects/${r}/outbox/enable`, owner: [200, null] },
  // the outbox deliveries and recovery routes are registered apart from the rest, with the same guard
  { method: 'GET', path: (r) => `/v1/projects/${r}/outbox/deliveries?limit=x`, owner: [400, 'validation_failed'] },
  { method: 'GET', path: (r) => `/v1/projects/${r}/outbox/deliveries/${NO_WEBHOOK}`, owner: [404, 'delivery_not_found'] },
  { method: 'POST', path: (r) => `/v1/projects/${r}/outbox/deliveries/${NO_WEBHOOK}/retry`, owner: [404, 'delivery_not_found'] },
  { method: 'POST', path: (r) => `/v1/projects/${r}/outbox/replay`, body: { status: 'delivered' }, owner: [400, 'validation_failed'] },
];

describe('Management API authorization matrix', () => {
  let svc: TestService;
  let mine: TestProject;
  let theirs: TestProject;
  let revoked: string;

  beforeAll(async () => {
    svc = await startTestService();
    mine = await svc.project('pro');
    theirs = await svc.project('enterprise');
    revoked = (await issueOwnerToken(svc.ctx, mine.ownerId, 'to revoke')).token;
    expect(await revokeOwnerToken(svc.ctx, revoked)).toBe(true);
  });
  afterAll(async () => svc?.stop());

  const call = (token: string | null, r: Route, ref: string, headers?: Record<string, string>) =>
    headers
      ? fetch(`${svc.url}${r.path(ref)}`, { method: r.method, headers: { ...headers, ...(r.body ? { 'content-type': 'application/json' } : {}) }, body: r.body ? JSON.stringify(r.body) : undefined }).then(async (res) => ({ status: res.status, body: await res.json() }))
      : svc.api(token, r.method, r.path(ref), r.body).then(({ status, body }) => ({ status, body }));

  describe.each(routes.map((r) => [`${r.method} ${r.path('{ref}')}`, r] as const))('%s', (_label, r) => {
    it('401 unauthorized without a token, with a malformed header, an unknown token or a revoked one', async () => {
      const answers = [
        await call(null, r, mine.ref),
        await call(null, r, mine.ref, { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }),
        await call(null, r, mine.ref, { authorization: 'Bearer' }),
        await call(null, r, mine.ref, { authorization: `Bearer ${mine.ownerToken} extra` }),
        await call('own_this-token-was-never-issued-by-anyone', r, mine.ref),
        await call(revoked, r, mine.ref),
      ];
      for (const a of answers) expect(a).toEqual({ status: 401, body: { code: 'unauthorized', message: expect.any(String) } });
    });

    it("404 project_not_found with another owner's token, the same answer as a missing project", async () => {
      const other = await call(theirs.ownerToken, r, mine.ref);
      const missing = await call(theirs.ownerToken, r, 'no-such-project');
      expect(other.status).toBe(404);
      expect(other.body).toEqual({ code: 'project_not_found', message: expect.any(String) });
      expect(missing).toEqual(other);
    });

    it('lets the owner through', async () => {
      const a = await call(mine.ownerToken, r, mine.ref);
      expect(a.status).toBe(r.owner[0]);
      if (r.owner[1]) expect(a.body.code).toBe(r.owner[1]);
    });
  });

  it('POST .../outbox/replay checks ownership before the body: a non-owner with a bad body gets 404, not 400', async () => {
    for (const body of [{ status: 'delivered' }, { nonsense: true }, { since: 'yesterday' }]) {
      const r = await svc.api(theirs.ownerToken, 'POST', `/v1/projects/${mine.ref}/outbox/replay`, body);
      expect(r).toMatchObject({ status: 404, body: { code: 'project_not_found' } });
      expect((await svc.api(mine.ownerToken, 'POST', `/v1/projects/${mine.ref}/outbox/replay`, body)).status).toBe(400);
    }
  });

  it('GET /v1/projects: 401 without a valid token, only the caller\'s projects with one', async () => {
    expect((await svc.api(null, 'GET', '/v1/projects')).status).toBe(401);
    expect((await svc.api(revoked, 'GET', '/v1/projects')).status).toBe(401);
    const list = await svc.api(theirs.ownerToken, 'GET', '/v1/projects');
    expect(list.body.map((p: { ref: string }) => p.ref)).toEqual([theirs.ref]);
  });

  it('answers 402 feature_not_in_plan on SMTP routes without custom_smtp, before looking at the body', async () => {
    const free = await svc.project('free');
    const path = `/v1/projects/${free.ref}/smtp`;
    for (const [method, body] of [['GET'], ['DELETE'], ['PUT', { host: 'smtp.example.com', port: 587, sender_email: 'a@example.com' }], ['PUT', { nonsense: true }]] as const) {
      const r = await svc.api(free.ownerToken, method, path, body);
      expect(r.status).toBe(402);
      expect(r.body).toEqual({ code: 'feature_not_in_plan', message: expect.stringContaining('custom SMTP') });
    }
    const head = await fetch(`${svc.url}${path}`, { method: 'HEAD', headers: { authorization: `Bearer ${free.ownerToken}` } });
    expect(head.status).toBe(402);
    // plans are data: moving the project to pro opens the routes
    await setPlan(svc.ctx, free.ref, 'pro');
    expect((await svc.api(free.ownerToken, 'GET', path)).body.code).toBe('smtp_not_configured');
    await setPlan(svc.ctx, free.ref, 'enterprise');
    expect((await svc.api(free.ownerToken, 'GET', path)).body.code).toBe('smtp_not_configured');
  });
});
