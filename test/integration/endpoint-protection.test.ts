// Endpoint protection on the real pipeline (Postgres, Debezium, Kafka, real HTTP receivers):
// a webhook whose receiver fails opens its circuit, its messages are held without attempts, only
// probes reach it while open, and it gets everything once it recovers; a healthy endpoint is not
// slowed meanwhile; a rate-limited webhook is measured at the receiver with two dispatchers
// sharing the limit. Auto-disable is endpoint-disable.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { registry } from '../../src/lib/metrics.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { ScriptedReceiver } from '../helpers/scripted-receiver.js';

const ENV = {
  OUTBOUND_ALLOW_CIDRS: '127.0.0.2/31',
  RETRY_TIME_SCALE: '0.001', // 30 ms, 120 ms, 600 ms, 1.8 s … between attempts
  CIRCUIT_FAILURE_THRESHOLD: '3',
  CIRCUIT_FAILURE_RATIO: '0.5',
  CIRCUIT_WINDOW: '60s',
  CIRCUIT_COOLDOWN: '1500ms',
  CIRCUIT_COOLDOWN_MAX: '3s',
  CIRCUIT_RELEASE_RATE: '20',
  DISPATCH_COMMIT_INTERVAL: '300ms',
};

describe('endpoint protection: circuit breaker and rate limit', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const a = new ScriptedReceiver();
  const b = new ScriptedReceiver();

  beforeAll(async () => {
    await a.start('127.0.0.2');
    await b.start('127.0.0.3');
    svc = await startTestService({ roles: ['api'], env: ENV });
    // two dispatchers (two consumer group members, each with its own gate and caches: they share
    // only what is in the control database) and a projector
    workers = [...(await startWorkers(svc.ctx, ['dispatcher', 'projector'])), ...(await startWorkers(svc.ctx, ['dispatcher']))];
    project = await svc.project('pro');
    expect((await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/outbox/enable`)).status).toBeLessThan(300);
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query('create table public.cb_items (id serial primary key, name text); create table public.rl_items (id serial primary key, name text); create table public.conflict_items (id serial primary key, name text)');
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await a.stop();
    await b.stop();
  });

  const call = async (method: string, path: string, body?: unknown) => (await svc.manage(project, method, path, body)).body;
  const webhook = (id: string) => call('GET', `/webhooks/${id}`);
  const deliveriesOf = async (webhookId: string) => (await call('GET', `/outbox/deliveries?webhook_id=${webhookId}&limit=100`)).deliveries as any[];
  const auditOf = async (action: string) => ((await call('GET', '/audit?limit=100')) as any[]).filter((e) => e.action === action);
  const insert = (table: string, n: number) => db.query(`insert into public.${table} (name) select 'row ' || g from generate_series(1, $1) g`, [n]);

  it('opens on failures, sends nothing but probes while open, and delivers everything held once the endpoint recovers', async () => {
    a.script('/cb', { status: 503, body: 'down for maintenance' });
    const hook = await call('POST', '/webhooks', { name: 'cb', table: 'public.cb_items', events: ['INSERT'], url: `${a.url}/cb`, timeout_ms: 2000 });
    expect(hook.circuit).toMatchObject({ state: 'closed', held_messages: 0 });

    // one message fails, and fails again up the (scaled) ladder: 3 endpoint faults open the circuit
    await insert('cb_items', 1);
    await eventually(async () => (await webhook(hook.id)).circuit.state === 'open', 30_000, 'the circuit to open');
    // an attempt made just before the opening may still be arriving
    await new Promise((r) => setTimeout(r, 300));
    const hitsAtOpen = a.to('/cb').length;
    expect(hitsAtOpen).toBeGreaterThanOrEqual(3);

    // a healthy endpoint meanwhile: delivered at once, while the circuit above stays open
    b.script('/ok', { status: 200 });
    const healthy = (await db.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"n":1}'::jsonb) as id from generate_series(1, 5)`, [`${b.url}/ok`])).rows.map((r) => r.id);
    await insert('cb_items', 10);
    await eventually(async () => b.to('/ok').length === 5, 30_000, 'the healthy endpoint to get its 5 requests');
    for (const id of healthy) {
      const d = await eventually(async () => {
        const x = await call('GET', `/outbox/deliveries/${id}`);
        return x.status === 'delivered' ? x : null;
      });
      expect(d.attempts).toBe(1);
    }
    expect((await webhook(hook.id)).circuit.state).not.toBe('closed');

    // the 10 new messages and the first one's next retry wait, held, visible in the API
    const held = await eventually(async () => {
      const c = (await webhook(hook.id)).circuit;
      return c.held_messages >= 10 ? c : null;
    }, 30_000, 'the messages to be held');
    expect(held).toMatchObject({ endpoint: `webhook:${hook.id}` });
    expect(held.failing_since).not.toBeNull();
    const endpoints = await call('GET', '/outbox/endpoints');
    expect(endpoints.find((e: any) => e.endpoint === `webhook:${hook.id}`)?.held_messages).toBeGreaterThanOrEqual(10);

    // at least one probe fails (cool-down 1.5 s, then 3 s) before the endpoint recovers
    await eventually(async () => (await webhook(hook.id)).circuit.failed_probes >= 1, 30_000, 'a failed probe');
    a.script('/cb', { status: 204 });
    const closed = await eventually(async () => {
      const entries = await auditOf('endpoint.circuit_close');
      return entries.find((e: any) => e.resource_id === hook.id);
    }, 30_000, 'the circuit to close');

    // every message of the webhook delivered: 11 rows
    const all = await eventually(async () => {
      const ds = await deliveriesOf(hook.id);
      return ds.length === 11 && ds.every((d) => d.status === 'delivered') ? ds : null;
    }, 60_000, 'all 11 messages delivered');

    // while open, the receiver saw the probes and nothing else
    const probes = (await auditOf('endpoint.circuit_probe')).filter((e: any) => e.resource_id === hook.id && Date.parse(e.created_at) <= Date.parse(closed.created_at));
    const whileOpen = a.to('/cb').slice(hitsAtOpen).filter((h) => h.at <= Date.parse(closed.created_at));
    expect(probes.length).toBeGreaterThanOrEqual(2); // the failed one(s) and the one that closed it
    expect(whileOpen.length).toBe(probes.length);

    // held time spends no attempt: of the 10 messages held before any attempt, only those that
    // went as a failed probe have a second attempt
    const failedProbes = probes.length - 1;
    // the message that opened the circuit is the one with the most attempts
    const first = all.reduce((m, d) => (d.attempts > m.attempts ? d : m));
    const extra = all.filter((d) => d !== first).reduce((n, d) => n + d.attempts - 1, 0);
    expect(extra).toBeLessThanOrEqual(failedProbes);
    // each hold put back is marked in the same transaction (held_releases): a copy of its record
    // read again later is done with, not sent beside the released one (dispatch-held-refetch.test.ts)
    const marked = (
      await svc.ctx.db.query('select message_id from held_releases where project_ref = $1 and message_id = any($2::uuid[])', [project.ref, all.map((d) => d.id)])
    ).rows;
    expect(marked.length).toBeGreaterThanOrEqual(10);

    expect((await auditOf('endpoint.circuit_open')).some((e: any) => e.resource_id === hook.id)).toBe(true);
    const metrics = await registry.getSingleMetricAsString('integrations_endpoint_circuit_transitions_total');
    expect(metrics).toMatch(/to="open"\} [1-9]/);
    expect(metrics).toMatch(/to="closed"\} [1-9]/);
    expect((await webhook(hook.id)).circuit).toMatchObject({ state: 'closed', held_messages: 0 });
  });

  it('retries a 409 conflict without counting it against the endpoint: its circuit stays closed', async () => {
    a.script('/conflict', { status: 409, body: 'version conflict' });
    const hook = await call('POST', '/webhooks', { name: 'conflict', table: 'public.conflict_items', events: ['INSERT'], url: `${a.url}/conflict`, timeout_ms: 2000 });
    await insert('conflict_items', 1);
    // attempt after attempt reaches the receiver up the (scaled) ladder, where 3 faults would have
    // opened the circuit and held the rest
    await eventually(async () => a.to('/conflict').length >= 5, 30_000, 'five attempts of the 409 message');
    const [d] = await deliveriesOf(hook.id);
    expect(d).toMatchObject({ status: 'failed', last_http_status: 409 });
    expect((await webhook(hook.id)).circuit).toMatchObject({ state: 'closed', held_messages: 0 });
    expect(await auditOf('endpoint.circuit_open').then((es) => es.filter((e: any) => e.resource_id === hook.id))).toEqual([]);
  });

  it('keeps a circuit per target host of base.http_request, listed among the endpoints', async () => {
    a.script('/api', { status: 500 });
    const enqueue = () => db.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"n":1}'::jsonb) as id`, [`${a.url}/api`]);
    const first = (await enqueue()).rows[0].id;
    const key = `host:${new URL(a.url).host}`;
    const open = await eventually(async () => ((await call('GET', '/outbox/endpoints')) as any[]).find((e) => e.endpoint === key && e.state === 'open'), 30_000, 'the host circuit to open');
    expect(open).toMatchObject({ webhook_id: null, last_error: 'HTTP 500' });
    expect(open.failures_in_window).toBeGreaterThanOrEqual(3);
    const heldBefore = await holds('circuit');
    const second = (await enqueue()).rows[0].id;
    a.script('/api', { status: 200 }); // before the first probe (cool-down 1.5 s): it succeeds
    for (const id of [first, second]) {
      await eventually(async () => (await call('GET', `/outbox/deliveries/${id}`)).status === 'delivered', 60_000, `${id} delivered`);
    }
    // the second message was held from the start (no attempt while open); its one attempt is the
    // probe or its release
    expect(await holds('circuit')).toBeGreaterThan(heldBefore);
    expect((await call('GET', `/outbox/deliveries/${second}`)).attempts).toBe(1);
  });

  it('a rate-limited webhook never gets more than its rate in any second, across two dispatchers, and spends no attempt on waiting', async () => {
    b.script('/rl', { status: 200 });
    const hook = await call('POST', '/webhooks', { name: 'rl', table: 'public.rl_items', events: ['INSERT'], url: `${b.url}/rl`, rate_limit: 5 });
    expect(hook.rate_limit).toBe(5);
    const holdsBefore = await holds('rate_limit');
    await insert('rl_items', 30); // one transaction: 30 messages at once
    const ds = await eventually(async () => {
      const x = await deliveriesOf(hook.id);
      return x.length === 30 && x.every((d) => d.status === 'delivered') ? x : null;
    }, 60_000, 'all 30 delivered').catch(async (err) => {
      // what was left, for the log of a failed run
      const q = async (sql: string) => JSON.stringify((await svc.ctx.db.query(sql)).rows);
      console.log('DIAG deliveries', JSON.stringify((await deliveriesOf(hook.id)).map((d) => [d.status, d.attempts, d.last_error])), 'hits', b.to('/rl').length);
      console.log('DIAG held', await q('select endpoint, reason, count(*) from held_messages group by 1, 2'), 'rate', await q('select *, clock_timestamp() from endpoint_rate'), 'health', await q('select * from endpoint_health'));
      throw err;
    });
    expect(ds.every((d) => d.attempts === 1)).toBe(true);
    const at = b.to('/rl').map((h) => h.at).sort((x, y) => x - y);
    expect(at.length).toBe(30);
    // GCRA spaces the sends' slots 200 ms apart, so any one-second window of slots holds at most
    // 5 + 1. What the receiver sees also carries each send's own delay after its slot (the slot's
    // answer from the control database, the timer, the event loop): under npm test's load one
    // late send can fall into the next second with its followers (CI saw 7 once, 2026-11-27).
    // So at most one more than that; without the limit all 30 would arrive within the same second.
    const worst = Math.max(...at.map((t) => at.filter((u) => u >= t && u < t + 1000).length));
    expect(worst).toBeLessThanOrEqual(7);
    // and over the whole burst the rate holds: 30 requests need at least 29 intervals
    expect(at[29] - at[0]).toBeGreaterThanOrEqual(29 * 200 - 250);
    // some waited in the hold (the burst is far beyond what may wait in a process)
    expect(await holds('rate_limit')).toBeGreaterThan(holdsBefore);
  });

  it('refuses a rate limit out of range', async () => {
    const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/webhooks`, { table: 'public.rl_items', events: ['INSERT'], url: `${b.url}/x`, rate_limit: 0 });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('validation_failed');
  });
});

async function holds(reason: string): Promise<number> {
  const m = await registry.getSingleMetric('integrations_endpoint_holds_total')!.get();
  return m.values.filter((v) => v.labels.reason === reason).reduce((s, v) => s + v.value, 0);
}
