// Endpoint protection keeps projects apart (docs/delivery.md, "One project's
// endpoints are its own"), on the real pipeline (Postgres, Debezium, Kafka, real HTTP receivers):
//
//   - two projects calling base.http_request on the same host:port have a circuit and held rows
//     each; one of them opening, holding and being given up on leaves the other's circuit, held
//     messages and deliveries as they were;
//   - a message id used by two projects is held once per project (held_messages is unique on
//     (project_ref, message_id, run, attempt)): neither copy passes for the other;
//   - giving up on an endpoint disables a webhook of its own project only, even when its circuit
//     row names another project's webhook, which migration 102 also makes impossible to write.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { GIVEN_UP } from '../../src/delivery/endpoints/gate.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { ScriptedReceiver } from '../helpers/scripted-receiver.js';

const DISABLE_AFTER_MS = 10_000;

describe('endpoint protection: one project never reaches another project’s circuits, held messages or webhooks', () => {
  let svc: TestService;
  let workers: Worker[] = [];
  let one: TestProject;
  let two: TestProject;
  let db1: pg.Client;
  let db2: pg.Client;
  // one host:port for both projects
  const shared = new ScriptedReceiver();
  const other = new ScriptedReceiver();

  beforeAll(async () => {
    await shared.start('127.0.0.2');
    await other.start('127.0.0.2');
    svc = await startTestService({
      roles: ['api'],
      env: {
        OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32',
        RETRY_TIME_SCALE: '0.001', // 30 ms, 120 ms, 600 ms, 1.8 s … between attempts
        CIRCUIT_FAILURE_THRESHOLD: '2',
        CIRCUIT_COOLDOWN: '300ms',
        CIRCUIT_COOLDOWN_MAX: '600ms',
        ENDPOINT_DISABLE_AFTER: `${DISABLE_AFTER_MS}ms`,
        DISPATCH_COMMIT_INTERVAL: '300ms',
      },
    });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    one = await svc.project('pro');
    two = await svc.project('pro');
    for (const p of [one, two]) expect((await svc.api(p.ownerToken, 'POST', `/v1/projects/${p.ref}/outbox/enable`)).status).toBeLessThan(300);
    db1 = new pg.Client({ connectionString: one.databaseUrl });
    db2 = new pg.Client({ connectionString: two.databaseUrl });
    await db1.connect();
    await db2.connect();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db1?.end();
    await db2?.end();
    await svc?.stop();
    await shared.stop();
    await other.stop();
  });

  const call = async (p: TestProject, method: string, path: string, body?: unknown) => (await svc.manage(p, method, path, body)).body;
  const endpointOf = async (p: TestProject, key: string) => ((await call(p, 'GET', '/outbox/endpoints')) as any[]).find((e) => e.endpoint === key);
  const audit = async (p: TestProject, action: string) => ((await call(p, 'GET', '/audit?limit=100')) as any[]).filter((e) => e.action === action);
  const delivery = (p: TestProject, id: string) => call(p, 'GET', `/outbox/deliveries/${id}`);
  const request = async (db: pg.Client, url: string, n: number): Promise<string[]> =>
    (await db.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"n":1}'::jsonb) as id from generate_series(1, $2)`, [url, n])).rows.map((r) => r.id);
  /** held rows of an endpoint, per project, as the control database has them */
  const heldRows = async (key: string) =>
    Object.fromEntries((await svc.ctx.db.query('select project_ref, count(*)::int as n from held_messages where endpoint = $1 group by 1', [key])).rows.map((r) => [r.project_ref, r.n])) as Record<string, number>;

  it('two projects on one host:port: each has its own circuit and held rows, and giving up on one leaves the other’s alone', async () => {
    shared.script('/one', { status: 503 });
    shared.script('/two', { status: 503 });
    const key = `host:${new URL(shared.url).host}`;

    // project one fails first: its circuit opens
    const first1 = await request(db1, `${shared.url}/one`, 3);
    const opened = async (p: TestProject) => {
      const e = await endpointOf(p, key);
      return e && e.state !== 'closed' && e.failing_since ? e : null;
    };
    const open1 = await eventually(() => opened(one), 30_000, 'project one’s circuit to open');
    expect(await endpointOf(two, key)).toBeUndefined(); // the same host:port, another project: nothing
    // what project one sends now is held
    const held1 = await request(db1, `${shared.url}/one`, 3);

    // project two fails later (so project one reaches ENDPOINT_DISABLE_AFTER well before it)
    await new Promise((r) => setTimeout(r, 4000));
    const first2 = await request(db2, `${shared.url}/two`, 3);
    const open2 = await eventually(() => opened(two), 30_000, 'project two’s circuit to open');
    expect(Date.parse(open2.failing_since)).toBeGreaterThan(Date.parse(open1.failing_since));
    const held2 = await request(db2, `${shared.url}/two`, 3);

    // both open: each project's messages are held in rows of its own
    await eventually(async () => {
      const rows = await heldRows(key);
      if (!(rows[one.ref] >= 1 && rows[two.ref] >= 3) || Object.keys(rows).length !== 2) return false;
      // each project's view counts its own rows only, not the endpoint's across projects
      const [v1, v2] = [await endpointOf(one, key), await endpointOf(two, key)];
      const again = await heldRows(key);
      return v1.held_messages === again[one.ref] && v2.held_messages === again[two.ref] && rows[one.ref] === again[one.ref] && rows[two.ref] === again[two.ref];
    }, 30_000, 'both projects’ messages held, each counted on its own');
    const heldIds1 = (await svc.ctx.db.query('select message_id from held_messages where project_ref = $1 and endpoint = $2', [one.ref, key])).rows.map((r) => r.message_id);
    expect(heldIds1.every((id) => [...first1, ...held1].includes(id))).toBe(true);

    // project one is given up on (ENDPOINT_DISABLE_AFTER of failed probes). Each failed probe sends
    // its message up the retry ladder (21.6 s at this scale by attempt 8), so after ~10 s of probing
    // all six could be on the ladder and none held when the give-up comes (CI saw
    // held_messages_ended 0 once): project one keeps writing, as an application would, and each
    // new message is held at once behind the open circuit
    const trickle: string[] = [];
    let writing = true;
    const writer = (async () => {
      while (writing) {
        trickle.push(...(await request(db1, `${shared.url}/one`, 1)));
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    const gaveUp = await eventually(async () => (await audit(one, 'endpoint.give_up')).find((e) => e.resource_id === key), 60_000, 'project one’s endpoint to be given up on').finally(async () => {
      writing = false;
      await writer;
    });
    expect(gaveUp.details.held_messages_ended).toBeGreaterThanOrEqual(1);
    // project two's circuit is the one it had (not removed and started again), still not closed,
    // its messages still held, and it was not given up on
    const after2 = await endpointOf(two, key);
    expect(after2).toMatchObject({ failing_since: open2.failing_since });
    expect(after2.state).not.toBe('closed');
    expect((await heldRows(key))[two.ref]).toBeGreaterThanOrEqual(1);
    expect(await audit(two, 'endpoint.give_up')).toEqual([]);

    // project two's endpoint answers again: every one of its messages is delivered, none ended
    shared.script('/two', { status: 200 });
    for (const id of [...first2, ...held2]) {
      await eventually(async () => (await delivery(two, id)).status === 'delivered', 60_000, `project two’s ${id} delivered`).catch(async (err) => {
        console.log('DIAG', id, JSON.stringify(await delivery(two, id).catch((e) => String(e))));
        throw err;
      });
    }
    // project one's held messages ended dead without a request, as many as the give-up counted
    const ended = await eventually(async () => {
      const ds = await Promise.all([...first1, ...held1, ...trickle].map((id) => delivery(one, id)));
      const given = ds.filter((d) => d.status === 'dead' && d.last_error === GIVEN_UP);
      return given.length >= gaveUp.details.held_messages_ended ? given : null;
    }, 30_000, 'project one’s held messages to end dead');
    expect(ended.every((d) => d.last_http_status === null)).toBe(true);
    expect(await audit(two, 'endpoint.give_up')).toEqual([]);
  });

  it('a message id used by both projects is held once for each: neither copy passes for the other', async () => {
    other.script('/same', { status: 503 });
    const key = `host:${new URL(other.url).host}`;
    // both projects' circuits on this endpoint open
    await request(db1, `${other.url}/same`, 2);
    await request(db2, `${other.url}/same`, 2);
    for (const p of [one, two]) await eventually(async () => ['open', 'half_open'].includes((await endpointOf(p, key))?.state), 30_000, `the circuit of ${p.ref} to open`);
    // no probe from now on, so each copy below stays held as attempt 1 of run 1 (a probe would send
    // it and hold its retry as attempt 2, and the two copies' keys would differ anyway)
    await eventually(async () => {
      await svc.ctx.db.query(`update endpoint_health set probe_at = now() + interval '1 hour' where endpoint = $1 and state = 'open'`, [key]);
      const r = await svc.ctx.db.query(`select 1 from endpoint_health where endpoint = $1 and state = 'open' and probe_at > now() + interval '30 minutes'`, [key]);
      return r.rowCount === 2;
    }, 30_000, 'both circuits open with no probe due');

    // the same message id, written by each project into its own outbox (a project chooses its
    // message ids: base.outbox is its database's table, and every request shows the id)
    const id = randomUUID();
    await enqueueWithId(db1, id, `${other.url}/same`);
    await eventually(async () => (await svc.ctx.db.query('select 1 from held_messages where message_id = $1', [id])).rowCount === 1, 30_000, 'project one’s copy held');
    await enqueueWithId(db2, id, `${other.url}/same`);
    const rows = await eventually(async () => {
      const r = await svc.ctx.db.query('select project_ref, endpoint, run, attempt from held_messages where message_id = $1 order by project_ref', [id]);
      return r.rows.length === 2 ? r.rows : null;
    }, 30_000, 'project two’s copy held too');
    expect(rows).toEqual(
      [one.ref, two.ref].sort().map((ref) => ({ project_ref: ref, endpoint: key, run: 1, attempt: 1 })),
    );
    // the key says so in the schema as well
    const keyDef = await svc.ctx.db.query(
      `select pg_get_constraintdef(oid) as def from pg_constraint where conrelid = 'held_messages'::regclass and contype = 'u'`,
    );
    expect(keyDef.rows.map((r) => r.def)).toEqual(['UNIQUE (project_ref, message_id, run, attempt)']);
  });

  it('giving up on an endpoint disables only a webhook of its own project', async () => {
    await db1.query('create table public.orders (id serial primary key, name text)');
    other.script('/orders', { status: 200 });
    const hook = await call(one, 'POST', '/webhooks', { name: 'orders', table: 'public.orders', events: ['INSERT'], url: `${other.url}/orders` });
    const key = `webhook:${hook.id}`;

    // a record of project two naming project one's webhook ends dead there, unsent, and makes no
    // circuit row in either project
    const forged = randomUUID();
    await enqueueWithId(db2, forged, null, { kind: 'webhook', body: { webhook_id: hook.id, payload: { type: 'INSERT', record: { id: 1 } } } });
    const d = await eventually(async () => {
      const x = await delivery(two, forged).catch(() => null);
      return x?.status === 'dead' ? x : null;
    }, 30_000, 'the forged record to end');
    expect(d.last_error).toBe('webhook deleted');
    expect(other.to('/orders')).toEqual([]);

    // the constraint: a circuit row of project two cannot name project one's webhook
    const refused = await svc.ctx.db
      .query(`insert into endpoint_health (project_ref, endpoint, webhook_id) values ($1, $2, $3)`, [two.ref, key, hook.id])
      .then(() => null, (e) => e);
    expect(refused?.code).toBe('23503');

    // and the code does not rely on it: such a row (written here around the constraint), open and
    // failing for longer than ENDPOINT_DISABLE_AFTER, is given up on without touching the webhook
    const admin = new pg.Client({ connectionString: (svc.ctx.db as unknown as { options: { connectionString: string } }).options.connectionString });
    await admin.connect();
    try {
      await admin.query('set session_replication_role = replica'); // foreign keys are not checked in this session
      await admin.query(
        `insert into endpoint_health (project_ref, endpoint, webhook_id, state, window_failures, last_error, opened_at, probe_at, failed_probes, failing_since)
         values ($1, $2, $3, 'open', 5, 'HTTP 503', now() - interval '1 hour', now() + interval '1 hour', 3, now() - interval '1 hour')`,
        [two.ref, key, hook.id],
      );
    } finally {
      await admin.end();
    }
    await eventually(async () => (await svc.ctx.db.query('select 1 from endpoint_health where project_ref = $1 and endpoint = $2', [two.ref, key])).rowCount === 0, 30_000, 'the row to be given up on');
    const w = await call(one, 'GET', `/webhooks/${hook.id}`);
    expect(w).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null });
    expect(await audit(one, 'webhook.auto_disable')).toEqual([]);
    expect(await audit(two, 'webhook.auto_disable')).toEqual([]);
    // still delivering
    await db1.query(`insert into public.orders (name) values ('after')`);
    await eventually(async () => other.to('/orders').length === 1, 30_000, 'the webhook to deliver');
  });
});

/**
 * Writes a message into a project's outbox with a chosen id, exactly as base._enqueue does (insert
 * and delete in one transaction; Debezium reads the insert).
 */
async function enqueueWithId(db: pg.Client, id: string, url: string | null, as?: { kind: 'webhook'; body: object }): Promise<void> {
  const kind = as?.kind ?? 'http';
  const body = as?.body ?? { method: 'POST', url, headers: {}, body: { n: 1 }, callback_function: null, timeout_ms: null };
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
