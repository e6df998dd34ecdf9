// What a database webhook sends, on the real stack (docs/delivery.md, "Payload shaping" and
// "Preview and test events"): the columns a message carries are chosen in the trigger; a body
// template with every placeholder is filled at send time, signed as sent, with {{secret:NAME}}
// from the project's secrets and never from a row's text; a template that renders over 1 MB ends
// dead unsent; what cannot work is refused at save. A preview shows the request a change would
// make without sending it; a test event goes through the outbox and is marked as a test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver } from '../helpers/receiver.js';

describe('webhook payload shaping, preview and test events', () => {
  let svc: TestService;
  let project: TestProject;
  let other: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32' } });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('pro');
    other = await svc.project('pro');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query(`create table public.orders (id int primary key, status text, amount numeric(10,2), customer jsonb, "shipping note" text, card_number text)`);
    expect((await call('PUT', '/secrets/CHAT_TOKEN', { value: 'chat-token-value-4711' })).status).toBeLessThan(300);
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  const call = (method: string, path: string, body?: unknown, who: TestProject = project) => svc.api(who.ownerToken, method, `/v1/projects/${project.ref}${path}`, body);
  const bodies = (path: string) => receiver.to(path).map((r) => JSON.parse(r.body));

  it('carries only the chosen columns, in record and old_record, chosen in the trigger', async () => {
    const hook = await call('POST', '/webhooks', { table: 'public.orders', events: ['INSERT', 'UPDATE'], url: `${receiver.url}/columns`, columns: ['id', 'status'] });
    expect(hook.status).toBe(201);
    expect(hook.body).toMatchObject({ columns: ['id', 'status'], template: null });
    await db.query(`insert into public.orders values (1, 'open', 10, '{"name":"Ada"}', 'leave at door', '4111111111111111')`);
    await db.query(`update public.orders set status = 'paid' where id = 1`);
    await eventually(async () => receiver.to('/columns').length >= 2, 30_000, 'both changes');
    const [ins, upd] = bodies('/columns');
    expect(ins).toMatchObject({ type: 'INSERT', record: { id: 1, status: 'open' }, old_record: null });
    expect(Object.keys(ins.record).sort()).toEqual(['id', 'status']);
    expect(upd).toMatchObject({ type: 'UPDATE', record: { id: 1, status: 'paid' }, old_record: { id: 1, status: 'open' } });
    expect(Object.keys(upd.old_record).sort()).toEqual(['id', 'status']);
    // the card number never left the project database: not in the outbox topic's record either
    const raw = JSON.stringify(receiver.to('/columns').map((r) => r.body));
    expect(raw).not.toContain('4111111111111111');
    expect((await call('DELETE', `/webhooks/${hook.body.id}`)).status).toBe(204);
  });

  it('fills a template with every placeholder, signs the body as sent, and takes secrets from the template only', async () => {
    const template = {
      text: 'Order {{record.id}} is {{record.status}} ({{type}} on {{schema}}.{{table}})',
      amount: '{{record.amount}}',
      customer: '{{record.customer}}',
      customer_name: '{{record.customer.name}}',
      first_tag: '{{record.customer.tags[0]}}',
      note: '{{record["shipping note"]}}',
      before: '{{old_record}}',
      before_status: '{{old_record.status}}',
      meta: { at: '{{occurred_at}}', webhook: '{{webhook_id}}', message: '{{message_id}}', test: '{{test}}', truncated: '{{truncated}}', dropped: '{{truncated_columns}}' },
      whole: '{{payload}}',
      token: 'Bearer {{secret:CHAT_TOKEN}}',
      list: ['{{record.id}}', 'id={{record.id}}', '{{ record.status }}'],
      missing_in_text: '[{{old_record.status}}]',
      literal: 'no placeholder here',
    };
    const hook = await call('POST', '/webhooks', { table: 'public.orders', events: ['INSERT'], url: `${receiver.url}/template`, template });
    expect(hook.status).toBe(201);
    expect(hook.body.template).toEqual(template);
    const secret = hook.body.signing_secret;
    // a row whose text looks like a placeholder: sent as text, never substituted
    await db.query(`insert into public.orders values (2, '{{secret:CHAT_TOKEN}}', 42.50, '{"name":"Grace","tags":["vip","eu"]}', 'ring twice', 'x')`);
    await eventually(async () => receiver.to('/template').length >= 1, 30_000, 'the templated request');
    const req = receiver.to('/template')[0];
    // the signature covers the rendered body (standardwebhooks verifies it)
    new Webhook(secret).verify(req.body, { 'webhook-id': req.headers['webhook-id'] as string, 'webhook-timestamp': req.headers['webhook-timestamp'] as string, 'webhook-signature': req.headers['webhook-signature'] as string });
    expect(req.headers['content-type']).toBe('application/json');
    const b = JSON.parse(req.body);
    expect(b.text).toBe('Order 2 is {{secret:CHAT_TOKEN}} (INSERT on public.orders)');
    expect(b.amount).toBe(42.5);
    expect(b.customer).toEqual({ name: 'Grace', tags: ['vip', 'eu'] });
    expect(b.customer_name).toBe('Grace');
    expect(b.first_tag).toBe('vip');
    expect(b.note).toBe('ring twice');
    expect(b.before).toBeNull();
    expect(b.before_status).toBeNull();
    expect(b.meta).toEqual({ at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), webhook: hook.body.id, message: req.headers['webhook-id'], test: false, truncated: false, dropped: [] });
    expect(b.whole).toMatchObject({ type: 'INSERT', table: 'orders', record: { id: 2, card_number: 'x' } });
    expect(b.token).toBe('Bearer chat-token-value-4711');
    expect(b.list).toEqual([2, 'id=2', '{{secret:CHAT_TOKEN}}']);
    expect(b.missing_in_text).toBe('[]');
    expect(b.literal).toBe('no placeholder here');
    // the secret's value is in nothing the service keeps: not in the delivery (projected from the
    // outcome's event after the request was answered: wait for it, or the GET can race it to a 404)
    const d = await eventually(async () => {
      const r = await call('GET', `/outbox/deliveries/${req.headers['webhook-id']}`);
      return r.status === 200 && r.body.status === 'delivered' ? r : null;
    }, 30_000, 'the delivery to be listed as delivered');
    expect(JSON.stringify(d.body)).not.toContain('chat-token-value-4711');
    expect((await call('DELETE', `/webhooks/${hook.body.id}`)).status).toBe(204);
  });

  it('ends a message dead, unsent, when its template renders over 1 MB, and truncation still applies to the row', async () => {
    await db.query(`create table public.docs (id int primary key, body text)`);
    const big = { copies: Array.from({ length: 8 }, () => '{{record.body}}') };
    const hook = await call('POST', '/webhooks', { table: 'public.docs', events: ['INSERT'], url: `${receiver.url}/big`, template: big });
    expect(hook.status).toBe(201);
    // 200 KB of text: the row is under 1 MB (not truncated), eight copies are over it
    await db.query(`insert into public.docs values (1, repeat('a', 200000))`);
    const id = await eventually(async () => {
      const list = (await call('GET', `/outbox/deliveries?webhook_id=${hook.body.id}`)).body.deliveries;
      return list[0]?.status === 'dead' ? list[0].id : null;
    }, 30_000, 'the delivery to end dead');
    const d = (await call('GET', `/outbox/deliveries/${id}`)).body;
    expect(d.last_error).toMatch(/template rendered \d+ bytes, over the 1048576-byte limit/);
    expect(d.last_http_status).toBeNull();
    expect(receiver.to('/big')).toHaveLength(0);
    // a row over 1 MB is truncated before the template sees it: the column is absent (null) and named
    // (another webhook: a changed template applies within DELIVERY_CONFIG_TTL, like a changed URL)
    await db.query(`create table public.docs2 (id int primary key, body text)`);
    const small = await call('POST', '/webhooks', { table: 'public.docs2', events: ['INSERT'], url: `${receiver.url}/truncated`, template: { id: '{{record.id}}', body: '{{record.body}}', truncated: '{{truncated}}', dropped: '{{truncated_columns}}' } });
    expect(small.status).toBe(201);
    await db.query(`insert into public.docs2 values (2, repeat('b', 1100000))`);
    await eventually(async () => receiver.to('/truncated').length >= 1, 30_000, 'the truncated row');
    expect(bodies('/truncated')[0]).toEqual({ id: 2, body: null, truncated: true, dropped: ['body'] });
  });

  it('refuses at save what cannot work, naming the placeholder or column', async () => {
    const base = { table: 'public.orders', events: ['INSERT'], url: `${receiver.url}/x` };
    const cases: [Record<string, unknown>, string, string][] = [
      [{ template: { a: '{{recrod.id}}' } }, 'invalid_template', '{{recrod.id}}'],
      [{ template: { a: '{{record.nope}}' } }, 'column_not_found', '"nope"'],
      [{ template: { a: '{{record.card_number}}' }, columns: ['id'] }, 'column_not_found', 'card_number'],
      [{ template: { a: '{{type.x}}' } }, 'invalid_template', 'no fields'],
      [{ template: { a: '{{record.id[}}' } }, 'invalid_template', 'path'],
      [{ template: { a: '{{secret:9bad}}' } }, 'invalid_template', 'secret:9bad'],
      [{ template: { a: 'x'.repeat(40_000) } }, 'invalid_template', 'limit'],
      [{ template: 'just text' }, 'validation_failed', 'template'],
      [{ columns: ['id', 'nope'] }, 'column_not_found', '"nope"'],
      [{ columns: [] }, 'validation_failed', 'columns'],
    ];
    for (const [extra, code, mention] of cases) {
      const r = await call('POST', '/webhooks', { ...base, ...extra });
      expect(r.status, JSON.stringify(extra).slice(0, 80)).toBe(400);
      expect(r.body.code).toBe(code);
      expect(r.body.message).toContain(mention);
    }
    // the same through PATCH
    const hook = await call('POST', '/webhooks', base);
    const r = await call('PATCH', `/webhooks/${hook.body.id}`, { template: { a: '{{old_record.missing}}' } });
    expect([r.status, r.body.code]).toEqual([400, 'column_not_found']);
    expect((await call('DELETE', `/webhooks/${hook.body.id}`)).status).toBe(204);
  });

  it('a column dropped after save: the message goes on without it, and its placeholder is null', async () => {
    await db.query(`create table public.items (id int primary key, sku text, legacy text)`);
    const hook = await call('POST', '/webhooks', { table: 'public.items', events: ['INSERT'], url: `${receiver.url}/dropped`, columns: ['id', 'legacy'], template: { id: '{{record.id}}', legacy: '{{record.legacy}}', text: 'legacy={{record.legacy}}' } });
    expect(hook.status).toBe(201);
    await db.query(`alter table public.items drop column legacy`);
    await db.query(`insert into public.items values (1, 'A-1')`);
    await eventually(async () => receiver.to('/dropped').length >= 1, 30_000, 'the insert after the drop');
    expect(bodies('/dropped')[0]).toEqual({ id: 1, legacy: null, text: 'legacy=' });
    // saving it again now names the column that is gone
    const r = await call('PATCH', `/webhooks/${hook.body.id}`, { columns: ['id', 'sku', 'legacy'] });
    expect([r.status, r.body.code]).toEqual([400, 'column_not_found']);
  });

  it('still reads a trigger installed by an earlier build (\'row\' and the key columns as arguments)', async () => {
    await db.query(`create table public.legacy (id int primary key, name text)`);
    const hook = await call('POST', '/webhooks', { table: 'public.legacy', events: ['INSERT'], url: `${receiver.url}/legacy` });
    expect(hook.body.ordering).toBe('row');
    const name = `webhook_${hook.body.id.replace(/-/g, '')}`;
    await db.query(`drop trigger ${name} on public.legacy`);
    await db.query(`create trigger ${name} after insert on public.legacy for each row execute function base.webhook_trigger('${hook.body.id}', 'row', 'id')`);
    await db.query(`insert into public.legacy values (41, 'old style')`);
    await eventually(async () => receiver.to('/legacy').length >= 1, 30_000, 'the row through the old trigger');
    expect(bodies('/legacy')[0]).toMatchObject({ type: 'INSERT', record: { id: 41, name: 'old style' } });
    const d = await eventually(async () => (await call('GET', `/outbox/deliveries?webhook_id=${hook.body.id}`)).body.deliveries[0], 30_000, 'its delivery');
    expect(d.ordering_key).toBe(`row:${hook.body.id}:[41]`);
  });

  it('previews the request a change would make, without sending it, and says why a change would not fire', async () => {
    const hook = await call('POST', '/webhooks', {
      table: 'public.orders',
      events: ['INSERT', 'UPDATE'],
      url: `${receiver.url}/preview`,
      headers: { authorization: 'Bearer {{secret:CHAT_TOKEN}}' },
      filter: { status: 'paid' },
      columns: ['id', 'status', 'amount'],
      template: { text: 'Order {{record.id}}: {{record.status}}', amount: '{{record.amount}}', token: '{{secret:CHAT_TOKEN}}' },
    });
    expect(hook.status).toBe(201);
    const before = receiver.requests.length;
    // a given sample, typed by the table ("12.5" becomes the numeric 12.50)
    const p = await call('POST', `/webhooks/${hook.body.id}/preview`, { type: 'INSERT', record: { id: 9, status: 'paid', amount: '12.5', card_number: '4111' } });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ fires: true, not_sent_because: [], sample: { type: 'INSERT', source: 'given' } });
    expect(p.body.request).toMatchObject({ method: 'POST', url: `${receiver.url}/preview`, body: { text: 'Order 9: paid', amount: 12.5, token: '{{secret:CHAT_TOKEN}}' } });
    expect(p.body.request.headers).toMatchObject({ authorization: 'Bearer {{secret:CHAT_TOKEN}}', 'content-type': 'application/json' });
    expect(p.body.request.size_bytes).toBe(Buffer.byteLength(JSON.stringify(p.body.request.body)));
    expect(JSON.stringify(p.body)).not.toContain('chat-token-value-4711');
    // a change the filter and events leave out
    const no = await call('POST', `/webhooks/${hook.body.id}/preview`, { type: 'DELETE', old_record: { id: 9, status: 'open' } });
    expect(no.body.fires).toBe(false);
    expect(no.body.not_sent_because).toEqual([expect.stringContaining('DELETE is not among its events'), 'the row filter does not match']);
    // no sample: the table's latest row (highest primary key)
    const latest = await call('POST', `/webhooks/${hook.body.id}/preview`);
    expect(latest.status).toBe(200);
    expect(latest.body.sample.source).toBe('latest_row');
    const top = (await db.query('select id, status from public.orders order by id desc limit 1')).rows[0];
    expect(latest.body.request.body.text).toBe(`Order ${top.id}: ${top.status}`);
    // the default body is the row-change payload, narrowed to the columns
    expect((await call('PATCH', `/webhooks/${hook.body.id}`, { template: null })).status).toBe(200);
    const plain = await call('POST', `/webhooks/${hook.body.id}/preview`, { record: { id: 3, status: 'paid', card_number: '4111' } });
    expect(plain.body.request.body).toMatchObject({ type: 'INSERT', schema: 'public', table: 'orders', record: { id: 3, status: 'paid', amount: null }, old_record: null, webhook_id: hook.body.id });
    expect(plain.body.request.body.record).not.toHaveProperty('card_number');
    // bad samples
    const bad: [unknown, number, string][] = [
      [{ record: { id: 'seven' } }, 400, 'invalid_sample'],
      [{ record: { nope: 1 } }, 400, 'invalid_sample'],
      [{ type: 'UPDATE' , old_record: { id: 1 } }, 400, 'invalid_sample'],
      [{ type: 'TRUNCATE' }, 400, 'validation_failed'],
      [{ record: { id: 1 }, extra: true }, 400, 'validation_failed'],
    ];
    for (const [body, status, code] of bad) {
      const r = await call('POST', `/webhooks/${hook.body.id}/preview`, body);
      expect([r.status, r.body.code], JSON.stringify(body)).toEqual([status, code]);
    }
    await db.query(`create table public.empty (id int primary key)`);
    const empty = await call('POST', '/webhooks', { table: 'public.empty', events: ['INSERT'], url: `${receiver.url}/e` });
    const none = await call('POST', `/webhooks/${empty.body.id}/preview`, {});
    expect([none.status, none.body.code]).toEqual([404, 'no_sample_row']);
    // nothing was sent by any of this
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.requests.length).toBe(before);
    // another project's owner: not found, on both routes
    for (const path of ['preview', 'test']) {
      const r = await call('POST', `/webhooks/${hook.body.id}/${path}`, {}, other);
      expect(r.status).toBe(404);
    }
  });

  it('sends a test event through the outbox, whatever the filter, recorded as a delivery marked test', async () => {
    const hook = await call('POST', '/webhooks', { table: 'public.orders', events: ['UPDATE'], url: `${receiver.url}/test-event`, filter: { status: 'never' } });
    expect(hook.status).toBe(201);
    const t = await call('POST', `/webhooks/${hook.body.id}/test`, { type: 'INSERT', record: { id: 77, status: 'paid' } });
    expect(t.status).toBe(202);
    expect(t.body.delivery).toBe(`/v1/projects/${project.ref}/outbox/deliveries/${t.body.message_id}`);
    await eventually(async () => receiver.to('/test-event').length >= 1, 30_000, 'the test event');
    const req = receiver.to('/test-event')[0];
    expect(req.headers['webhook-id']).toBe(t.body.message_id);
    new Webhook(hook.body.signing_secret).verify(req.body, { 'webhook-id': req.headers['webhook-id'] as string, 'webhook-timestamp': req.headers['webhook-timestamp'] as string, 'webhook-signature': req.headers['webhook-signature'] as string });
    expect(JSON.parse(req.body)).toMatchObject({ type: 'INSERT', test: true, record: { id: 77, status: 'paid' } });
    const d = await eventually(async () => {
      const r = await call('GET', `/outbox/deliveries/${t.body.message_id}`);
      return r.body.status === 'delivered' ? r.body : null;
    }, 30_000, 'the test delivery');
    expect(d.test).toBe(true);
    const list = (await call('GET', `/outbox/deliveries?webhook_id=${hook.body.id}`)).body.deliveries;
    expect(list.map((x: { id: string; test: boolean }) => [x.id, x.test])).toEqual([[t.body.message_id, true]]);
    // a table change's delivery is not a test
    const audit = (await call('GET', '/audit?limit=20')).body.filter((e: { action: string }) => e.action === 'webhook.test');
    expect(audit[0]).toMatchObject({ resource_id: hook.body.id, details: { message_id: t.body.message_id } });
    // a disabled webhook sends no test
    expect((await call('PATCH', `/webhooks/${hook.body.id}`, { enabled: false })).status).toBe(200);
    const off = await call('POST', `/webhooks/${hook.body.id}/test`);
    expect([off.status, off.body.code]).toEqual([409, 'webhook_disabled']);
  });
});
