// One project's messages are its own (issue 25, item 5; docs/delivery.md, "One project's messages
// are its own"), on the real pipeline (Postgres, Debezium, Kafka, real HTTP receivers). A message id
// is made in the project's own database, and every request shows it (webhook-id), so another
// project can write a record into its own base.outbox with the very same id. Here project B does,
// and:
//
//   - both messages are delivered, each to its own receiver: neither is skipped as "already
//     recorded" (the ledger) nor waits for the other while it is in flight (the dispatcher);
//   - each project's deliveries API shows its own delivery (target, status, attempts, response)
//     and its own callback, called in its own database;
//   - the ledger, the attempts and the callback work have a row per project;
//   - a retry by B's owner sends B's message again, not A's; a replay by A's owner, A's only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver, type Received } from '../helpers/receiver.js';

describe('one message id in two projects: each project’s message is delivered, listed, recorded and retried as its own', () => {
  let svc: TestService;
  let workers: Worker[] = [];
  let a: TestProject;
  let b: TestProject;
  let dbA: pg.Client;
  let dbB: pg.Client;
  const recvA = new Receiver();
  const recvB = new Receiver();

  beforeAll(async () => {
    await recvA.start('127.0.0.2');
    await recvB.start('127.0.0.3');
    svc = await startTestService({
      roles: ['api'],
      env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/31', RETRY_TIME_SCALE: '0.001', DISPATCH_COMMIT_INTERVAL: '300ms' },
    });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    a = await svc.project('pro');
    b = await svc.project('pro');
    dbA = new pg.Client({ connectionString: a.databaseUrl });
    dbB = new pg.Client({ connectionString: b.databaseUrl });
    for (const [p, db] of [[a, dbA], [b, dbB]] as const) {
      expect((await svc.api(p.ownerToken, 'POST', `/v1/projects/${p.ref}/outbox/enable`)).status).toBeLessThan(300);
      await db.connect();
      await db.query(`
        create table public.cb_log (n serial primary key, payload jsonb not null);
        create function public.on_done(p jsonb) returns void language sql security definer as $$ insert into public.cb_log (payload) values (p) $$;
        revoke all on function public.on_done(jsonb) from public;
        grant execute on function public.on_done(jsonb) to base_callback;
        create table public.orders (id serial primary key, note text);`);
    }
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await dbA?.end();
    await dbB?.end();
    await svc?.stop();
    await recvA.stop();
    await recvB.stop();
  });

  const call = (p: TestProject, method: string, path: string, body?: unknown) => svc.manage(p, method, path, body);
  const delivery = async (p: TestProject, id: string) => {
    const r = await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}/outbox/deliveries/${id}`);
    return r.status === 200 ? r.body : null;
  };
  const settled = (p: TestProject, id: string, status: string, run = 1) =>
    eventually(
      async () => {
        const d = await delivery(p, id);
        return d?.status === status && d.run === run ? d : null;
      },
      60_000,
      `${p.ref}'s ${id} to be ${status} (run ${run})`,
    );
  const listed = async (p: TestProject, id: string) => ((await call(p, 'GET', '/outbox/deliveries?limit=100')).body.deliveries as any[]).filter((d) => d.id === id);
  const rows = async (sql: string, id: string) => (await svc.ctx.db.query(sql, [id])).rows;
  const history = (d: any) => d.attempt_history.map((h: any) => [h.run, h.attempt, h.outcome, h.http_status]);

  it('a record of project B with the id of project A’s delivered message is delivered too, and each project sees and calls back its own', async () => {
    recvA.answer('/a', { status: 200, body: 'answer of A' });
    recvB.answer('/b', { status: 200, body: 'answer of B' });
    const id = (await dbA.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"from":"a"}'::jsonb, 'public.on_done', 5000) as id`, [`${recvA.url}/a`])).rows[0].id as string;
    await settled(a, id, 'delivered');
    // A's outcome is recorded (ledger) before B's record is read: B's must not pass for it
    expect(await rows('select 1 from delivery_ledger where message_id = $1 and final', id)).toHaveLength(1);

    await enqueueWithId(dbB, id, { method: 'POST', url: `${recvB.url}/b`, headers: {}, body: { from: 'b' }, callback_function: 'public.on_done', timeout_ms: 5000 });
    await eventually(async () => recvB.to('/b').length === 1, 60_000, 'project B’s message at its receiver');
    expect(JSON.parse(recvB.to('/b')[0].body)).toEqual({ from: 'b' });

    // each project's delivery is its own: target, status, history, response
    const dB = await settled(b, id, 'delivered');
    expect(dB).toMatchObject({ id, kind: 'http', target: `${recvB.url}/b`, attempts: 1, total_attempts: 1, last_http_status: 200, last_response_body: 'answer of B' });
    expect(history(dB)).toEqual([[1, 1, 'delivered', 200]]);
    const dA = await delivery(a, id);
    expect(dA).toMatchObject({ id, kind: 'http', status: 'delivered', target: `${recvA.url}/a`, attempts: 1, total_attempts: 1, last_response_body: 'answer of A' });
    expect(history(dA)).toEqual([[1, 1, 'delivered', 200]]);
    expect((await listed(a, id)).map((d) => d.target)).toEqual([`${recvA.url}/a`]);
    expect((await listed(b, id)).map((d) => d.target)).toEqual([`${recvB.url}/b`]);
    expect(recvA.to('/a')).toHaveLength(1);

    // each callback runs once, in its own project's database, with its own outcome
    for (const [p, db, body] of [[a, dbA, 'answer of A'], [b, dbB, 'answer of B']] as const) {
      const d = await eventually(async () => {
        const x = await delivery(p, id);
        return x?.callback?.status === 'ok' ? x : null;
      }, 60_000, `${p.ref}'s callback`);
      expect(d.callback).toMatchObject({ function: 'public.on_done', status: 'ok', attempts: 1 });
      expect((await db.query('select payload from public.cb_log')).rows.map((r) => r.payload)).toEqual([
        { id, status: 'delivered', delivered: true, body, error: null, attempts: 1 },
      ]);
    }

    // one row per project in the ledger, the attempts and the callback work
    const byProject = [a.ref, b.ref].sort();
    expect(await rows('select project_ref, run, attempt, outcome, final from delivery_ledger where message_id = $1 order by project_ref', id)).toEqual(
      byProject.map((ref) => ({ project_ref: ref, run: 1, attempt: 1, outcome: 'delivered', final: true })),
    );
    expect(await rows('select project_ref, run, attempt, outcome from delivery_attempts where delivery_id = $1 order by project_ref', id)).toEqual(
      byProject.map((ref) => ({ project_ref: ref, run: 1, attempt: 1, outcome: 'delivered' })),
    );
    expect(await rows('select project_ref, target from deliveries where id = $1 order by project_ref', id)).toEqual(
      [[a.ref, `${recvA.url}/a`], [b.ref, `${recvB.url}/b`]].sort().map(([ref, target]) => ({ project_ref: ref, target })),
    );
    expect(await rows('select project_ref, status from delivery_callbacks where message_id = $1 order by project_ref', id)).toEqual(
      byProject.map((ref) => ({ project_ref: ref, status: 'ok' })),
    );
    // and the keys say so in the schema
    const keys = await svc.ctx.db.query(
      `select conrelid::regclass::text as t, pg_get_constraintdef(oid) as def from pg_constraint
        where contype = 'p' and conrelid in ('delivery_ledger'::regclass, 'deliveries'::regclass, 'delivery_attempts'::regclass, 'delivery_callbacks'::regclass)
        order by 1`,
    );
    expect(keys.rows).toEqual([
      { t: 'deliveries', def: 'PRIMARY KEY (project_ref, id)' },
      { t: 'delivery_attempts', def: 'PRIMARY KEY (project_ref, delivery_id, run, attempt)' },
      { t: 'delivery_callbacks', def: 'PRIMARY KEY (project_ref, message_id, run)' },
      { t: 'delivery_ledger', def: 'PRIMARY KEY (project_ref, message_id, run, attempt)' },
    ]);
  });

  it('webhook messages: B’s record with the webhook-id A’s receiver saw goes to B’s webhook, signed with B’s secret', async () => {
    const hookA = (await call(a, 'POST', '/webhooks', { name: 'orders', table: 'public.orders', events: ['INSERT'], url: `${recvA.url}/hook` })).body;
    const hookB = (await call(b, 'POST', '/webhooks', { name: 'orders', table: 'public.orders', events: ['INSERT'], url: `${recvB.url}/hook` })).body;
    await dbA.query(`insert into public.orders (note) values ('of A')`);
    const [seenA] = await eventually(async () => (recvA.to('/hook').length === 1 ? recvA.to('/hook') : null), 60_000, 'A’s webhook request');
    const id = String(seenA.headers['webhook-id']);
    expect(verify(hookA.signing_secret, seenA)).toMatchObject({ record: { note: 'of A' } });
    await settled(a, id, 'delivered');

    // B writes a webhook record of its own webhook, with that id
    const payload = { type: 'INSERT', schema: 'public', table: 'orders', record: { id: 1, note: 'of B' }, old_record: null, webhook_id: hookB.id, occurred_at: new Date().toISOString() };
    await enqueueWithId(dbB, id, { webhook_id: hookB.id, payload }, 'webhook');
    const [seenB] = await eventually(async () => (recvB.to('/hook').length === 1 ? recvB.to('/hook') : null), 60_000, 'B’s webhook request');
    expect(seenB.headers['webhook-id']).toBe(id);
    expect(verify(hookB.signing_secret, seenB)).toEqual(payload);
    expect(() => verify(hookA.signing_secret, seenB)).toThrow();

    const dB = await settled(b, id, 'delivered');
    expect(dB).toMatchObject({ kind: 'webhook', webhook_id: hookB.id, target: `${recvB.url}/hook` });
    expect(await delivery(a, id)).toMatchObject({ kind: 'webhook', status: 'delivered', webhook_id: hookA.id, target: `${recvA.url}/hook` });
    expect(recvA.to('/hook')).toHaveLength(1);
    expect(await rows('select project_ref from delivery_ledger where message_id = $1 order by 1', id)).toEqual([a.ref, b.ref].sort().map((ref) => ({ project_ref: ref })));
  });

  it('both in flight at once, both dead: B’s owner retries B’s message only, A’s owner replays A’s only', async () => {
    recvA.answer('/slow', { hang: true });
    recvB.answer('/gone', { status: 410, body: 'gone at B' });
    const id = (await dbA.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"from":"a"}'::jsonb, null, 60000) as id`, [`${recvA.url}/slow`])).rows[0].id as string;
    await eventually(async () => recvA.hanging === 1, 60_000, 'A’s request in flight');

    // B's record with the same id is sent while A's attempt is still in flight
    await enqueueWithId(dbB, id, { method: 'POST', url: `${recvB.url}/gone`, headers: {}, body: { from: 'b' }, callback_function: null, timeout_ms: 5000 });
    await eventually(async () => recvB.to('/gone').length === 1, 60_000, 'B’s request while A’s is in flight');
    expect(recvA.hanging).toBe(1);
    const deadB = await settled(b, id, 'dead');
    expect(deadB).toMatchObject({ target: `${recvB.url}/gone`, last_http_status: 410, last_response_body: 'gone at B' });

    // A's attempt ends dead after B's (so A's dead letter is the later one on the dead topic)
    recvA.release(410);
    const deadA = await settled(a, id, 'dead');
    expect(deadA).toMatchObject({ target: `${recvA.url}/slow`, last_http_status: 410 });

    // B's owner retries: B's message goes again, to B's receiver; A's stays dead
    recvA.answer('/slow', { status: 200 });
    recvB.answer('/gone', { status: 200, body: 'back at B' });
    const r = await svc.api(b.ownerToken, 'POST', `/v1/projects/${b.ref}/outbox/deliveries/${id}/retry`);
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ id, status: 'pending', run: 2 });
    const retried = await settled(b, id, 'delivered', 2);
    expect(retried).toMatchObject({ target: `${recvB.url}/gone`, last_response_body: 'back at B' });
    expect(history(retried)).toEqual([
      [1, 1, 'dead', 410],
      [2, 1, 'delivered', 200],
    ]);
    expect(recvB.to('/gone')).toHaveLength(2);
    expect(JSON.parse(recvB.to('/gone')[1].body)).toEqual({ from: 'b' });
    await new Promise((r) => setTimeout(r, 1000)); // anything sent for A would be there by now
    expect(recvA.to('/slow')).toHaveLength(1);
    expect(await delivery(a, id)).toMatchObject({ status: 'dead', run: 1, attempts: 1, last_http_status: 410 });
    expect(await rows(`select project_ref, run from delivery_ledger where message_id = $1 and outcome = 'superseded'`, id)).toEqual([{ project_ref: b.ref, run: 1 }]);

    // A's owner replays A's dead deliveries: A's message goes again, B's delivery is left as it is
    const replay = await call(a, 'POST', '/outbox/replay', { status: 'dead' });
    expect(replay.body).toMatchObject({ matched: 1, replayed: 1, not_found: 0 });
    await settled(a, id, 'delivered', 2);
    expect(recvA.to('/slow')).toHaveLength(2);
    expect(JSON.parse(recvA.to('/slow')[1].body)).toEqual({ from: 'a' });
    expect(recvB.to('/gone')).toHaveLength(2);
    expect(await delivery(b, id)).toMatchObject({ status: 'delivered', run: 2, target: `${recvB.url}/gone` });
    expect(await rows(`select project_ref, run from delivery_ledger where message_id = $1 and outcome = 'superseded' order by 1`, id)).toEqual(
      [a.ref, b.ref].sort().map((ref) => ({ project_ref: ref, run: 1 })),
    );
  });

  // The dispatcher reads a fetch's ledger check and the heads of its ordered keys in one statement
  // (ordering/keys.ts, OrderingStore.check): both answers must stay with the project they belong to.
  // The ledger's half fails this case when its project condition is dropped (checked); a head read
  // for the wrong project is caught later by park, which reads the head within the project.
  it('ordered messages: A’s blocked key does not hold B’s message of that key, and A’s recorded id does not pass for B’s', async () => {
    // A's key k is blocked: the head row a failing message of A's on the retry ladder leaves behind
    const headA = '00000000-0000-4000-8000-00000000a0a0';
    await svc.ctx.db.query(`insert into ordering_heads (project_ref, ordering_key, message_id, run, seq, reason) values ($1, 'key:k', $2, 1, 0, 'retry')`, [a.ref, headA]);
    try {
      // B's message of the same key goes at once
      await dbB.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"from":"b"}'::jsonb, ordering_key => 'k')`, [`${recvB.url}/k`]);
      await eventually(async () => recvB.to('/k').length === 1, 60_000, 'B’s message of key k at its receiver');
      // A's waits behind A's head, as it must
      const idA = (await dbA.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"from":"a"}'::jsonb, ordering_key => 'k') as id`, [`${recvA.url}/k`])).rows[0].id as string;
      await eventually(
        async () => (await rows(`select 1 from ordering_queue where project_ref = '${a.ref}' and ordering_key = 'key:k' and message_id = $1`, idA)).length === 1,
        60_000,
        'A’s message of key k queued behind A’s head',
      );
      expect(recvA.to('/k')).toHaveLength(0);
      expect(await rows(`select project_ref from ordering_heads where message_id = $1`, headA)).toEqual([{ project_ref: a.ref }]);

      // an ordered message of A's delivered and recorded; B's ordered record with its id is sent too
      const id = (await dbA.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"from":"a"}'::jsonb, ordering_key => 'd') as id`, [`${recvA.url}/d`])).rows[0].id as string;
      await settled(a, id, 'delivered');
      await enqueueWithId(dbB, id, { method: 'POST', url: `${recvB.url}/d`, headers: {}, body: { from: 'b' }, callback_function: null, timeout_ms: 5000, ordering_key: 'key:d', seq: 1 });
      await eventually(async () => recvB.to('/d').length === 1, 60_000, 'B’s ordered record with A’s id at its receiver');
      expect(await settled(b, id, 'delivered')).toMatchObject({ target: `${recvB.url}/d`, ordering_key: 'key:d' });
      expect(recvA.to('/d')).toHaveLength(1);
    } finally {
      await svc.ctx.db.query(`delete from ordering_queue where project_ref = $1 and ordering_key = 'key:k'`, [a.ref]);
      await svc.ctx.db.query(`delete from ordering_heads where project_ref = $1 and ordering_key = 'key:k'`, [a.ref]);
    }
  });
});

const verify = (secret: string, r: Received) =>
  new Webhook(secret).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });

/**
 * Writes a message into a project's outbox with a chosen id, as base._enqueue does (insert and
 * delete in one transaction; Debezium reads the insert): what anyone who may write to the
 * project's database can do.
 */
async function enqueueWithId(db: pg.Client, id: string, body: object, kind: 'http' | 'webhook' = 'http'): Promise<void> {
  await db.query('begin');
  try {
    await db.query(
      `insert into base.outbox (id, aggregateid, type, payload)
       values ($1::uuid, $1::uuid::text, $2::text, $3::jsonb || jsonb_build_object('id', $1::uuid, 'kind', $2::text,
               'created_at', to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')))`,
      [id, kind, JSON.stringify(body)],
    );
    await db.query('delete from base.outbox where id = $1', [id]);
    await db.query('commit');
  } catch (e) {
    await db.query('rollback');
    throw e;
  }
}
