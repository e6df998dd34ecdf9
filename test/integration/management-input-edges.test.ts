// Inputs a schema lets through that used to reach PostgreSQL or the dispatcher as a fault (found by
// an attacker's review, 2026-11-29): each is now a 4xx with a stable code, or works. Forged page
// cursors, a leap second, NUL and unpaired surrogates in a webhook's filter and template, a column
// dropped under a saved filter, a ban for longer than a date holds, and a template's secret written
// with spaces inside the braces (accepted at save, then never looked up: every delivery failed).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver } from '../helpers/receiver.js';

const cursor = (key: unknown[]) => Buffer.from(JSON.stringify(key)).toString('base64url');

describe('management inputs at the edges', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32' } });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('enterprise');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query('create table public.orders (id int primary key, status text, note text)');
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  const call = (method: string, path: string, body?: unknown) => svc.api(project.ownerToken, method, `/v1/projects/${project.ref}${path}`, body);
  const refused = (r: { status: number; body: any }, code: string) => {
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.code).toBe(code);
    expect(typeof r.body.message).toBe('string');
  };

  it('a forged page cursor is 400 validation_failed, whatever its timestamp or key holds', async () => {
    const id = '00000000-0000-4000-8000-000000000001';
    for (const at of ['1', '12345', 'March 7', '2020-02-30T00:00:00Z', '+275760-09-13T00:00:00.000Z', '2021-13-01T00:00:00Z', '2021-01-01 00:00:00']) {
      refused(await call('GET', `/outbox/deliveries?cursor=${cursor([at, id])}`), 'validation_failed');
      refused(await call('GET', `/outbox/blocked-keys?cursor=${cursor([at, 'k'])}`), 'validation_failed');
    }
    refused(await call('GET', `/outbox/blocked-keys?cursor=${cursor(['2021-01-01T00:00:00.000000Z', 'a\u0000b'])}`), 'validation_failed');
    // what the listings hand out still pages
    expect((await call('GET', `/outbox/deliveries?cursor=${cursor(['2021-01-01T00:00:00.123456Z', id])}`)).status).toBe(200);
    expect((await call('GET', `/outbox/blocked-keys?cursor=${cursor(['2021-01-01T00:00:00.123456Z', 'row:x'])}`)).status).toBe(200);
  });

  it('a replay bounded by a leap second is 400, not a query of NaN', async () => {
    refused(await call('POST', '/outbox/replay', { since: '2016-12-31T23:59:60Z' }), 'validation_failed');
    refused(await call('POST', '/outbox/replay', { until: '2016-12-31T23:59:60Z' }), 'validation_failed');
    expect((await call('POST', '/outbox/replay', { since: '2016-12-31T23:59:59Z' })).status).toBe(202);
  });

  it('NUL and unpaired surrogates in a filter, a template or an ordering key are refused at the door', async () => {
    const base = { table: 'public.orders', events: ['INSERT'], url: `${receiver.url}/edges` };
    for (const extra of [
      { filter: { status: 'x\u0000y' } },
      { filter: { 'st\u0000': 'x' } },
      { filter: { status: '\ud800' } },
      { filter: { status: 'x\u0000y' }, enabled: false },
      { template: { a: 'x\u0000y' } },
      { template: { 'k\u0000': 'v' } },
      { template: { a: '\ud800' } },
      { template: { a: '\u0000' }, enabled: false },
    ]) {
      const r = await call('POST', '/webhooks', { ...base, ...extra });
      expect(r.status, JSON.stringify(extra)).toBe(400);
      expect(r.body.code).toBe('validation_failed');
    }
    const hook = await call('POST', '/webhooks', base);
    expect(hook.status).toBe(201);
    refused(await call('PATCH', `/webhooks/${hook.body.id}`, { template: { a: '\u0000' } }), 'validation_failed');
    refused(await call('PATCH', `/webhooks/${hook.body.id}`, { filter: { status: 'x\u0000y' } }), 'validation_failed');
    refused(await call('POST', `/webhooks/${hook.body.id}/backfills`, { filter: { status: 'x\u0000y' } }), 'validation_failed');
    refused(await call('POST', '/outbox/blocked-keys/skip', { ordering_key: 'a\u0000b' }), 'validation_failed');
    // a key that is merely unusual is looked up (not blocked: 404)
    expect((await call('POST', '/outbox/blocked-keys/skip', { ordering_key: 'a\tb' })).status).toBe(404);
    expect((await call('DELETE', `/webhooks/${hook.body.id}`)).status).toBe(204);
  });

  it('a preview whose filter names a column dropped since is 400 column_not_found', async () => {
    await db.query('create table public.tickets (id int primary key, state text)');
    const hook = await call('POST', '/webhooks', { table: 'public.tickets', events: ['INSERT'], url: `${receiver.url}/tickets`, filter: { state: 'open' } });
    expect(hook.status).toBe(201);
    await db.query(`insert into public.tickets values (1, 'open')`);
    await db.query('alter table public.tickets drop column state cascade');
    refused(await call('POST', `/webhooks/${hook.body.id}/preview`, { type: 'INSERT', record: { id: 1 } }), 'column_not_found');
    refused(await call('POST', `/webhooks/${hook.body.id}/preview`), 'column_not_found');
  });

  it('a ban longer than a date can hold is 400', async () => {
    const user = await call('POST', '/auth/users', { email: 'edge@example.com', email_confirm: true });
    expect(user.status).toBe(201);
    for (const ban_duration of ['100000000d', '99999999999999999999d', '876001h']) refused(await call('PATCH', `/auth/users/${user.body.id}`, { ban_duration }), 'validation_failed');
    const ok = await call('PATCH', `/auth/users/${user.body.id}`, { ban_duration: '876000h' });
    expect(ok.status).toBe(200);
    expect(new Date(ok.body.banned_until).getUTCFullYear()).toBeGreaterThan(2100);
  });

  it("a template's {{ secret:NAME }} with spaces is filled in the preview and in what is sent", async () => {
    expect((await call('PUT', '/secrets/EDGE_TOKEN', { value: 'edge-secret-value-2207' })).status).toBeLessThan(300);
    const hook = await call('POST', '/webhooks', { table: 'public.orders', events: ['INSERT'], url: `${receiver.url}/spaced`, template: { auth: '{{ secret:EDGE_TOKEN }}', id: '{{record.id}}' } });
    expect(hook.status).toBe(201);
    const preview = await call('POST', `/webhooks/${hook.body.id}/preview`, { type: 'INSERT', record: { id: 7, status: 'open', note: null } });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body.request.body).toEqual({ auth: '{{secret:EDGE_TOKEN}}', id: 7 });
    await db.query(`insert into public.orders values (8, 'open', null)`);
    await eventually(async () => receiver.to('/spaced').length >= 1, 30_000, 'the templated change');
    expect(JSON.parse(receiver.to('/spaced')[0].body)).toEqual({ auth: 'edge-secret-value-2207', id: 8 });
  });
});
