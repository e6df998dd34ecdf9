// Database webhooks end to end: a table change fires the webhook's trigger, the message travels
// through Debezium and Kafka, and the dispatcher sends the row-change payload (docs/delivery.md, "Payloads") signed per Standard Webhooks
// (verified with the official `standardwebhooks` package) to the URL the webhook has at send time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver, type Received } from '../helpers/receiver.js';

describe('delivery of database webhooks', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let dispatcher: Worker | undefined;
  let projector: Worker[] = [];
  const receiver = new Receiver();
  let hook: { id: string; signing_secret: string };

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32' } });
    [dispatcher] = await startWorkers(svc.ctx, ['dispatcher']);
    projector = await startWorkers(svc.ctx, ['projector']);
    project = await svc.project('pro');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query('create table public.items (id serial primary key, name text, big text)');
    await call('PUT', '/secrets/HOOK_TOKEN', { value: 'hook-token-value-987' });
    hook = (
      await call('POST', '/webhooks', {
        name: 'items',
        table: 'public.items',
        events: ['INSERT', 'UPDATE', 'DELETE'],
        url: `${receiver.url}/hook`,
        headers: { 'x-env': 'test', authorization: 'Token {{secret:HOOK_TOKEN}}' },
        timeout_ms: 5000,
      })
    ).body;
    expect(hook.signing_secret).toMatch(/^whsec_/);
  });

  afterAll(async () => {
    await Promise.all([dispatcher, ...projector].map((w) => w?.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  const call = (method: string, path: string, body?: unknown) => svc.manage(project, method, path, body);

  const final = (id: string) =>
    eventually(
      async () => {
        const r = await svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/outbox/deliveries/${id}`);
        return r.status === 200 && r.body.status !== 'pending' ? r.body : null;
      },
      60_000,
      `a final outcome for ${id}`,
    );

  const requestsFor = (pred: (payload: any) => boolean, n = 1) =>
    eventually(async () => {
      const found = receiver.requests.filter((r) => r.headers['webhook-id'] && pred(JSON.parse(r.body)));
      return found.length >= n ? found : null;
    }, 60_000, 'webhook requests');

  const verify = (secret: string, r: Received) =>
    new Webhook(secret).verify(r.body, {
      'webhook-id': String(r.headers['webhook-id']),
      'webhook-timestamp': String(r.headers['webhook-timestamp']),
      'webhook-signature': String(r.headers['webhook-signature']),
    });

  it('sends INSERT, UPDATE and DELETE payloads, signed and verifiable with standardwebhooks', async () => {
    const { rows } = await db.query(`insert into public.items (name) values ('first') returning id`);
    const id = rows[0].id;
    await db.query(`update public.items set name = 'renamed' where id = $1`, [id]);
    await db.query(`delete from public.items where id = $1`, [id]);
    const got = await requestsFor((p) => p.record?.id === id || p.old_record?.id === id, 3);
    const byType = Object.fromEntries(got.map((r) => [JSON.parse(r.body).type, r]));

    const insert = JSON.parse(byType.INSERT.body);
    expect(insert).toMatchObject({ type: 'INSERT', schema: 'public', table: 'items', record: { id, name: 'first', big: null }, old_record: null, webhook_id: hook.id });
    expect(Date.parse(insert.occurred_at)).not.toBeNaN();
    expect(insert.truncated).toBeUndefined();
    expect(JSON.parse(byType.UPDATE.body)).toMatchObject({ type: 'UPDATE', record: { id, name: 'renamed' }, old_record: { id, name: 'first' } });
    expect(JSON.parse(byType.DELETE.body)).toMatchObject({ type: 'DELETE', record: null, old_record: { id, name: 'renamed' } });

    for (const r of got) {
      expect(verify(hook.signing_secret, r)).toEqual(JSON.parse(r.body));
      expect(() => verify('whsec_' + Buffer.alloc(32, 7).toString('base64'), r)).toThrow();
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-env']).toBe('test');
      expect(r.headers.authorization).toBe('Token hook-token-value-987');
      // webhook-id is the message id: the delivery is listed under it, with the header as written
      const d = await final(String(r.headers['webhook-id']));
      expect(d).toMatchObject({ kind: 'webhook', status: 'delivered', webhook_id: hook.id, method: 'POST', target: `${receiver.url}/hook` });
    }
  });

  it('truncates a row larger than 1 MB: large values left out, truncated: true', async () => {
    const { rows } = await db.query(`insert into public.items (name, big) values ('huge', repeat('x', 1100000)) returning id`);
    const [r] = await requestsFor((p) => p.record?.id === rows[0].id);
    const payload = JSON.parse(r.body);
    expect(payload).toMatchObject({ type: 'INSERT', truncated: true, truncated_columns: ['big'], record: { id: rows[0].id, name: 'huge' } });
    expect(payload.record).not.toHaveProperty('big');
    expect(r.body.length).toBeLessThan(10_000);
    expect(verify(hook.signing_secret, r)).toEqual(payload);
  });

  it('signs with both secrets during a rotation grace period', async () => {
    const rotated = (await call('PATCH', `/webhooks/${hook.id}`, { rotate_secret: true })).body;
    expect(rotated.signing_secret).not.toBe(hook.signing_secret);
    // the cache may serve the old configuration for up to DELIVERY_CONFIG_TTL (1 s)
    const r = await eventually(async () => {
      const { rows } = await db.query(`insert into public.items (name) values ('after rotation') returning id`);
      const [got] = await requestsFor((p) => p.record?.id === rows[0].id);
      return String(got.headers['webhook-signature']).split(' ').length === 2 ? got : null;
    }, 30_000, 'a request signed by two secrets');
    expect(verify(rotated.signing_secret, r)).toBeTruthy();
    expect(verify(hook.signing_secret, r)).toBeTruthy();
    hook = { ...hook, signing_secret: rotated.signing_secret };
  });

  it('reads the webhook at send time: an update applies to queued messages, a deleted webhook ends them dead without a request', async () => {
    const other = (await call('POST', '/webhooks', { name: 'doomed', table: 'public.items', events: ['INSERT'], url: `${receiver.url}/doomed` })).body;
    // Messages queue up on the topic while no dispatcher runs.
    await dispatcher!.stop();
    dispatcher = undefined;
    const { rows } = await db.query(`insert into public.items (name) values ('queued') returning id`);
    const rowId = rows[0].id;
    await call('PATCH', `/webhooks/${hook.id}`, { url: `${receiver.url}/moved`, headers: { 'x-env': 'moved' } });
    await call('DELETE', `/webhooks/${other.id}`);
    [dispatcher] = await startWorkers(svc.ctx, ['dispatcher']);

    const [moved] = await requestsFor((p) => p.record?.id === rowId);
    expect(moved.path).toBe('/moved');
    expect(moved.headers['x-env']).toBe('moved');
    expect(verify(hook.signing_secret, moved)).toBeTruthy();

    const dead = await eventually(async () => {
      const r = await svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/outbox/deliveries?status=dead&kind=webhook`);
      return r.body.deliveries.find((d: any) => d.webhook_id === other.id);
    }, 60_000, 'the deleted webhook\'s delivery');
    expect(dead).toMatchObject({ status: 'dead', last_error: 'webhook deleted', last_http_status: null, attempts: 1 });
    expect(receiver.to('/doomed')).toHaveLength(0);
  });
});

