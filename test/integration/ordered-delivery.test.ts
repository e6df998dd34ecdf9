// Ordered delivery on the real stack (docs/delivery.md, "Ordered delivery"): 200 rows updated 20
// times each, a receiver that answers 503 to a random fifth of the requests and is slow on others,
// two dispatchers of which one is killed with SIGKILL in the middle. Per row, the receiver must never
// see a version older than one it already acknowledged, and every row's last version must arrive.
// The same for base.http_request calls sharing an ordering_key; a key that keeps failing blocks only
// itself (and shows as blocked, with its head, in the API); tables without a primary key are refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { childEnv, spawnService } from '../helpers/delivery-tools.js';
import { eventually } from '../helpers/env.js';
import { Receiver } from '../helpers/receiver.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

// The issue's size (200 rows x 20 updates) with ORDERED_STRESS=1; npm test runs a smaller one beside
// the other files (the same kill and failures, a quarter of the messages), so as not to starve them.
const STRESS = process.env.ORDERED_STRESS === '1';
const ROWS = STRESS ? 200 : 100;
const VERSIONS = STRESS ? 20 : 10;
// Short steps, so the stress's 503s (never a message's fourth request) retry at once, and a last step
// of ten minutes: a call whose receiver always fails ('stuck', r1, r2) stays its key's head in retry
// for the whole file instead of running out of attempts before the other keys are delivered (in CI,
// with the stuck key's 503s on the calls' own host, they took over a minute, and its first two calls
// had ended dead by then). The seventh step is the last one used: the wait before the eighth and
// last attempt (MAX_ATTEMPTS 8); an eighth step would never be reached.
const RETRIES = { RETRY_DELAYS: '1s,1s,2s,2s,3s,3s,10m', DISPATCH_COMMIT_INTERVAL: '300ms', DISPATCH_SESSION_TIMEOUT: '6s', ENDPOINT_WINDOW_INITIAL: '64' };

/**
 * Keeps, per key, the highest version it acknowledged, and notes every request that carries an
 * older one. A fifth of the requests get 503 (never a message's fourth request or later, so none
 * runs out of attempts), some of the others wait up to 40 ms. Paths under /fail/ always get 503.
 * A failing key gets a receiver of its own instead (`failing`, answering 503): an endpoint of base.http_request is a host,
 * and a host whose only traffic is a failing head's 503s pauses its window and opens its circuit
 * (docs/delivery.md, "Endpoint protection"), which would also hold the calls that must arrive (CI,
 * 2026-11-29: r1's second call held behind the stuck key's 503s on the shared host).
 */
class OrderCheckingReceiver {
  readonly acked = new Map<string, number>();
  readonly violations: string[] = [];
  readonly tries = new Map<string, number>();
  requests = 0;
  #server!: http.Server;
  url = '';

  constructor(private readonly read: (path: string, body: any) => { key: string; version: number }) {}

  async start(): Promise<void> {
    this.#server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        this.requests++;
        const path = req.url ?? '/';
        if (path.startsWith('/fail/')) return void res.writeHead(503).end();
        const { key, version } = this.read(path, JSON.parse(Buffer.concat(chunks).toString('utf8')));
        const seen = this.acked.get(key) ?? -1;
        if (version < seen) this.violations.push(`${key}: got version ${version} after acknowledging ${seen}`);
        const id = String(req.headers['webhook-id'] ?? req.headers['x-message'] ?? `${key}/${version}`);
        const n = (this.tries.get(id) ?? 0) + 1;
        this.tries.set(id, n);
        if (n < 4 && Math.random() < 0.2) return void res.writeHead(503).end();
        const answer = () => {
          this.acked.set(key, Math.max(this.acked.get(key) ?? -1, version));
          res.writeHead(200).end();
        };
        if (Math.random() < 0.3) setTimeout(answer, Math.floor(Math.random() * 40));
        else answer();
      });
    });
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.2', r));
    this.url = `http://127.0.0.2:${(this.#server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((r) => this.#server.close(() => r()));
  }
}

describe('ordered delivery', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  let child: ChildProcess | undefined;
  let childLog = '';
  const rows = new OrderCheckingReceiver((_path, body) => ({ key: String((body.record ?? body.old_record).id), version: Number((body.record ?? body.old_record).v) }));
  const calls = new OrderCheckingReceiver((_path, body) => ({ key: String(body.k), version: Number(body.v) }));
  const failing = { stuck: new Receiver(), r1: new Receiver(), r2: new Receiver() };

  beforeAll(async () => {
    await Promise.all([rows.start(), calls.start(), ...Object.values(failing).map((r) => r.start('127.0.0.2'))]);
    for (const r of Object.values(failing)) r.answerDefault({ status: 503 });
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32', ...RETRIES } });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('pro');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query('create table public.accounts (id int primary key, v int not null)');
    await db.query('create table public.events_log (note text)');
  });

  afterAll(async () => {
    child?.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await Promise.all([rows.stop(), calls.stop(), ...Object.values(failing).map((r) => r.stop())]);
  });

  async function call(method: string, path: string, body?: unknown) {
    return svc.api(project.ownerToken, method, `/v1/projects/${project.ref}${path}`, body);
  }

  function startDispatcher(): ChildProcess {
    return spawnService(childEnv(svc, { ROLES: 'dispatcher', ...RETRIES }), (c) => (childLog += c));
  }

  it('defaults to row ordering on a table with a primary key, and refuses it on one without', async () => {
    const refused = await call('POST', '/webhooks', { table: 'public.events_log', events: ['INSERT'], url: `${rows.url}/log`, ordering: 'row' });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('ordering_needs_primary_key');
    expect(refused.body.message).toContain('public.events_log');
    const plain = await call('POST', '/webhooks', { table: 'public.events_log', events: ['INSERT'], url: `${rows.url}/log` });
    expect(plain.status).toBe(201);
    expect(plain.body.ordering).toBe('none');
    const toRow = await call('PATCH', `/webhooks/${plain.body.id}`, { ordering: 'row' });
    expect(toRow.status).toBe(400);
    expect(toRow.body.code).toBe('ordering_needs_primary_key');
    expect((await call('GET', `/webhooks/${plain.body.id}`)).body.ordering).toBe('none');
    expect((await call('DELETE', `/webhooks/${plain.body.id}`)).status).toBe(204);
    const keyed = await call('POST', '/webhooks', { table: 'public.accounts', events: ['INSERT'], url: `${rows.url}/log` });
    expect(keyed.status).toBe(201);
    expect(keyed.body.ordering).toBe('row');
    expect((await call('DELETE', `/webhooks/${keyed.body.id}`)).status).toBe(204);
  });

  // Under load (two of these at once) this found a stall (a released record committed with nothing
  // sent) and a head's copy sent after its key had moved on; both are fixed (docs/delivery.md,
  // "Ordered delivery", Tests).
  it(`delivers ${ROWS} rows x ${VERSIONS} updates in order per row through 503s, slow answers and a killed dispatcher`, async () => {
    const hook = await call('POST', '/webhooks', { table: 'public.accounts', events: ['INSERT', 'UPDATE'], url: `${rows.url}/accounts`, ordering: 'row' });
    expect(hook.status).toBe(201);
    expect(hook.body.ordering).toBe('row');
    child = startDispatcher();
    // Both dispatchers in the groups before the first change: a partition moving between two live
    // processes may let an attempt in flight on the old owner finish after the new owner's next one
    // (docs/delivery.md, "Ordered delivery", limits); a process killed sends nothing more.
    const admin = svc.ctx.kafka.admin();
    await admin.connect();
    try {
      await eventually(async () => {
        const { groups } = await admin.describeGroups([svc.ctx.groups.dispatcher, svc.ctx.groups.retry]);
        return groups.every((g) => g.state === 'Stable' && g.members.length === 2);
      }, 120_000, `the second dispatcher to join (${childLog})`);
    } finally {
      await admin.disconnect();
    }
    await db.query(`insert into public.accounts select i, 0 from generate_series(1, ${ROWS}) i`);
    for (let v = 1; v < VERSIONS; v++) {
      // one transaction per update of each row, in a shuffled order of rows, a few at a time
      const order = [...Array(ROWS).keys()].map((i) => i + 1).sort(() => Math.random() - 0.5);
      for (let i = 0; i < order.length; i += 20) {
        await db.query('begin');
        for (const id of order.slice(i, i + 20)) await db.query('update public.accounts set v = v + 1 where id = $1', [id]);
        await db.query('commit');
      }
      if (v === Math.floor(VERSIONS / 3)) {
        // a third in: kill the second dispatcher while it is delivering
        await eventually(async () => rows.acked.size > ROWS / 4, 60_000, `acknowledgments before the kill (${childLog})`);
        child.kill('SIGKILL');
      }
    }
    const last = VERSIONS - 1;
    const state = async () => {
      const heads = await svc.ctx.db.query('select reason, count(*)::int as n from ordering_heads group by reason');
      const queued = await svc.ctx.db.query('select count(*)::int as n from ordering_queue');
      const behind = [...Array(ROWS).keys()].filter((i) => rows.acked.get(String(i + 1)) !== last).slice(0, 5).map((i) => `${i + 1}@${rows.acked.get(String(i + 1))}`);
      const stuck = await svc.ctx.db.query(
        `select h.ordering_key, h.message_id, h.run, h.reason, h.head_since,
                (select json_agg(json_build_object('run', l.run, 'attempt', l.attempt, 'outcome', l.outcome, 'final', l.final)) from delivery_ledger l where l.message_id = h.message_id) as ledger,
                (select json_build_object('status', d.status, 'attempts', d.attempts, 'run', d.run) from deliveries d where d.id = h.message_id) as delivery
           from ordering_heads h`,
      );
      return `rows behind: ${behind.join(' ')}; heads ${JSON.stringify(heads.rows)}; queued ${queued.rows[0].n}; requests ${rows.requests}; stuck ${JSON.stringify(stuck.rows)}; child log: ${childLog.slice(-3000)}`;
    };
    await eventually(async () => [...Array(ROWS).keys()].every((i) => rows.acked.get(String(i + 1)) === last), 200_000, 'every row\'s last version').catch(async (e) => {
      throw new Error(`${(e as Error).message}: ${await state()}`);
    });
    expect(rows.violations).toEqual([]);
    expect(rows.acked.size).toBe(ROWS);
    // the deliveries carry their key and place
    const list = await call('GET', `/outbox/deliveries?webhook_id=${hook.body.id}&limit=5`);
    expect(list.status).toBe(200);
    expect(list.body.deliveries[0].ordering_key).toMatch(new RegExp(`^row:${hook.body.id}:\\[\\d+\\]$`));
    expect(typeof list.body.deliveries[0].seq).toBe('number');
  }, 300_000);

  it('keeps base.http_request calls sharing an ordering_key in order, and a failing key blocks only itself', async () => {
    // one key whose receiver always fails, enqueued first: its later calls queue behind it
    await db.query('begin');
    for (let v = 0; v < 3; v++) {
      await db.query(`select base.http_request('POST', $1, '{}'::jsonb, $2::jsonb, ordering_key => 'stuck')`, [`${failing.stuck.url}/fail/stuck`, JSON.stringify({ k: 'stuck', v })]);
    }
    await db.query('commit');
    const KEYS = 40;
    const PER_KEY = 10;
    for (let v = 0; v < PER_KEY; v++) {
      await db.query('begin');
      for (let k = 0; k < KEYS; k++) {
        await db.query(`select base.http_request('POST', $1, '{}'::jsonb, $2::jsonb, ordering_key => $3)`, [`${calls.url}/calls`, JSON.stringify({ k: `c${k}`, v }), `c${k}`]);
      }
      await db.query('commit');
    }
    await eventually(async () => [...Array(KEYS).keys()].every((k) => calls.acked.get(`c${k}`) === PER_KEY - 1), 120_000, 'every key\'s last call');
    expect(calls.violations).toEqual([]);

    // the stuck key shows as blocked behind its first call, with the two others queued
    const blocked = await eventually(async () => {
      const r = await call('GET', '/outbox/blocked-keys');
      return r.status === 200 && r.body.keys.find((k: any) => k.ordering_key === 'key:stuck' && k.queued === 2) ? r.body.keys : null;
    }, 30_000, 'the stuck key listed as blocked').catch(async (e) => {
      // what the key looked like, so a failure under load says where it stood
      const keys = (await call('GET', '/outbox/blocked-keys')).body;
      const heads = await svc.ctx.db.query(
        `select h.ordering_key, h.reason, h.run, (select json_agg(json_build_object('attempt', l.attempt, 'outcome', l.outcome, 'final', l.final)) from delivery_ledger l where l.message_id = h.message_id) as ledger
           from ordering_heads h where h.ordering_key = 'key:stuck'`,
      );
      const queue = await svc.ctx.db.query(`select count(*)::int as n from ordering_queue where ordering_key = 'key:stuck'`);
      throw new Error(`${(e as Error).message}: listed ${JSON.stringify(keys)}; head ${JSON.stringify(heads.rows)}; queued rows ${queue.rows[0].n}; requests ${calls.requests}`);
    });
    const stuck = blocked.find((k: any) => k.ordering_key === 'key:stuck');
    expect(stuck.head.reason).toBe('retry');
    expect(Date.parse(stuck.since)).toBeGreaterThan(0);
    // the queued calls show what they wait for
    const waiting = await eventually(async () => {
      const r = await call('GET', '/outbox/deliveries?status=pending&limit=50');
      const found = r.body.deliveries.filter((d: any) => d.ordering_key === 'key:stuck' && d.waiting_for);
      return found.length === 2 ? found : null;
    }, 30_000, 'the queued calls listed as pending behind the head');
    expect(waiting.every((d: any) => d.waiting_for.message_id === stuck.head.message_id)).toBe(true);

    // another project's owner neither sees this key nor can skip it (keys are per project), and
    // another spelling of the key is another key
    const other = await svc.project('pro');
    const asOther = (method: string, path: string, body?: unknown) => svc.api(other.ownerToken, method, `/v1/projects/${other.ref}${path}`, body);
    expect((await asOther('GET', '/outbox/blocked-keys')).body.keys).toEqual([]);
    const foreign = await asOther('POST', '/outbox/blocked-keys/skip', { ordering_key: 'key:stuck' });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('ordering_key_not_blocked');
    // the other owner's token on this project's route is refused before anything is looked at
    expect((await svc.api(other.ownerToken, 'POST', `/v1/projects/${project.ref}/outbox/blocked-keys/skip`, { ordering_key: 'key:stuck' })).status).toBe(404);
    for (const spelling of ['key:STUCK', 'key:stuck ', 'stuck']) {
      expect((await call('POST', '/outbox/blocked-keys/skip', { ordering_key: spelling })).body.code).toBe('ordering_key_not_blocked');
    }
    const still = ((await call('GET', '/outbox/blocked-keys')).body.keys as any[]).find((k) => k.ordering_key === 'key:stuck');
    expect(still.head.message_id).toBe(stuck.head.message_id);
    expect(still.queued).toBe(2);

    // the owner skips the head: it ends dead, and the next call becomes the head
    const skip = await call('POST', '/outbox/blocked-keys/skip', { ordering_key: 'key:stuck' });
    expect(skip.status).toBe(200);
    expect(skip.body.skipped.message_id).toBe(stuck.head.message_id);
    const head = await eventually(async () => {
      const r = await call('GET', `/outbox/deliveries/${stuck.head.message_id}`);
      return r.body.status === 'dead' ? r.body : null;
    }, 30_000, 'the skipped head to show dead');
    expect(head.last_error).toContain('skipped by the owner');
    await eventually(async () => {
      const r = await call('GET', '/outbox/blocked-keys');
      const k = r.body.keys.find((x: any) => x.ordering_key === 'key:stuck');
      return k && k.head.message_id !== stuck.head.message_id && k.queued === 1;
    }, 30_000, 'the next call to head the key');
    expect((await call('POST', '/outbox/blocked-keys/skip', { ordering_key: 'key:nothing' })).body.code).toBe('ordering_key_not_blocked');
  }, 200_000);

  it('never sends an older message of a key again after a newer one, and a failed head retried by hand stays the head', async () => {
    const enqueue = async (url: string, key: string, v: number) =>
      (await db.query(`select base.http_request('POST', $1, '{}'::jsonb, $2::jsonb, ordering_key => $3) as id`, [url, JSON.stringify({ k: key, v }), key])).rows[0].id as string;
    const blockedHead = async (key: string) => ((await call('GET', '/outbox/blocked-keys')).body.keys as any[]).find((k) => k.ordering_key === `key:${key}`);
    // A wait that times out says where the key stood: its head, its queue, its messages' ledger, and
    // the endpoints holding anything (CI's r1 failure said only "last: false").
    const q = (sql: string, values: unknown[]) => svc.ctx.db.query(sql, values).then((r) => JSON.stringify(r.rows), (err) => `(${(err as Error).message})`);
    const explained = <T>(wait: Promise<T>, key: string): Promise<T> =>
      wait.catch(async (e) => {
        const k = `key:${key}`;
        throw new Error(
          `${(e as Error).message}: head ${await q('select message_id, run, reason, head_since from ordering_heads where project_ref = $1 and ordering_key = $2', [project.ref, k])}` +
            `; queued ${await q('select message_id, run, seq from ordering_queue where project_ref = $1 and ordering_key = $2', [project.ref, k])}` +
            `; ledger ${await q(`select l.message_id, l.run, l.attempt, l.outcome, l.final from delivery_ledger l join deliveries d on d.id = l.message_id and d.project_ref = l.project_ref where d.project_ref = $1 and d.ordering_key = $2 order by l.recorded_at`, [project.ref, k])}` +
            `; endpoints ${await q('select endpoint, state, failing_since from endpoint_health where project_ref = $1', [project.ref])}` +
            `; held ${await q('select message_id, reason from held_messages where project_ref = $1', [project.ref])}`,
        );
      });

    // r1: the first call fails and is skipped, the second is delivered; the first may not go again
    await db.query('begin');
    const a = await enqueue(`${failing.r1.url}/fail/r1`, 'r1', 0);
    await enqueue(`${calls.url}/calls`, 'r1', 1);
    await db.query('commit');
    await explained(eventually(async () => (await blockedHead('r1'))?.head.message_id === a, 30_000, 'r1 blocked by its first call'), 'r1');
    expect((await call('POST', '/outbox/blocked-keys/skip', { ordering_key: 'key:r1' })).status).toBe(200);
    await explained(eventually(async () => calls.acked.get('r1') === 1, 30_000, 'the second call of r1 delivered'), 'r1');
    await eventually(async () => (await call('GET', `/outbox/deliveries/${a}`)).body.status === 'dead', 30_000, 'the skipped call dead');
    const retry = await call('POST', `/outbox/deliveries/${a}/retry`);
    expect(retry.status).toBe(409);
    expect(retry.body.code).toBe('delivery_superseded');
    const replay = await call('POST', '/outbox/replay', { status: 'dead' });
    expect(replay.status).toBe(202);
    expect(replay.body.superseded).toBeGreaterThanOrEqual(1);

    // r2: a failing head retried by hand stays the head (with its new run), and its key stays blocked
    await db.query('begin');
    const c = await enqueue(`${failing.r2.url}/fail/r2`, 'r2', 0);
    await enqueue(`${calls.url}/calls`, 'r2', 1);
    await db.query('commit');
    await explained(eventually(async () => {
      const h = await blockedHead('r2');
      return h?.head.message_id === c && h.queued === 1 && (await call('GET', `/outbox/deliveries/${c}`)).body.status === 'failed';
    }, 30_000, 'r2 blocked by its failed first call'), 'r2');
    const again = await call('POST', `/outbox/deliveries/${c}/retry`);
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(again.body.run).toBe(2);
    // past a sweep of the ordering keys (every 5 s): the closed run 1 did not let the key go
    await new Promise((r) => setTimeout(r, 6000));
    const h = await blockedHead('r2');
    expect(h.head.message_id).toBe(c);
    expect(h.head.run).toBe(2);
    expect(h.queued).toBe(1);
    expect(calls.acked.get('r2')).toBeUndefined();
  }, 120_000);

  it('advances a head whose final outcome was recorded but whose advance was cut off (the sweep)', async () => {
    const id = '7f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f';
    await svc.ctx.db.query(`insert into ordering_heads (project_ref, ordering_key, message_id, run, seq, reason) values ($1, 'key:cut', $2, 1, 1, 'retry')`, [project.ref, id]);
    await svc.ctx.db.query(`insert into delivery_ledger (project_ref, message_id, run, attempt, outcome, final) values ($1, $2, 1, 2, 'delivered', true)`, [project.ref, id]);
    await eventually(async () => (await svc.ctx.db.query(`select 1 from ordering_heads where project_ref = $1 and ordering_key = 'key:cut'`, [project.ref])).rowCount === 0, 20_000, 'the sweep to end the block');
  }, 30_000);

  it('keeps the order when a partition moves to a second live dispatcher while attempts are in flight', async () => {
    // One request to a webhook with max_in_flight 1 hangs until its attempt times out (20 s): the
    // first changes of the other rows wait behind it in the first dispatcher. A second dispatcher
    // joins meanwhile (a rebalance hands it partitions) and the second change of every row is
    // written. The new owner must not send a row's second change while its first, still waiting in
    // the old owner, has not been sent: without partition leases it did, and the first arrived late.
    const hangs = new Set<string>();
    const seen = new Map<string, number>();
    const violations: string[] = [];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const id = String(body.record.id);
        const v = Number(body.record.v);
        if ((seen.get(id) ?? -1) > v) violations.push(`${id}: got version ${v} after acknowledging ${seen.get(id)}`);
        const wid = String(req.headers['webhook-id']);
        if (v === 1 && hangs.size === 0) {
          hangs.add(wid);
          setTimeout(() => res.writeHead(503).end(), 25_000).unref();
          return;
        }
        seen.set(id, Math.max(seen.get(id) ?? -1, v));
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.2', r));
    try {
      const url = `http://127.0.0.2:${(server.address() as AddressInfo).port}/handoff`;
      await db.query('create table public.handoff (id int primary key, v int not null)');
      const hook = await call('POST', '/webhooks', { table: 'public.handoff', events: ['INSERT', 'UPDATE'], url, ordering: 'row', timeout_ms: 20_000, max_in_flight: 1 });
      expect(hook.status).toBe(201);
      const ROWS_H = 24;
      await db.query(`insert into public.handoff select i, 0 from generate_series(1, ${ROWS_H}) i`);
      await eventually(async () => [...Array(ROWS_H).keys()].every((i) => seen.get(String(i + 1)) === 0), 60_000, 'the inserts');
      await db.query('update public.handoff set v = 1');
      await eventually(async () => hangs.size === 1, 30_000, 'a first change hanging at the receiver');
      // a second live dispatcher joins: the partitions are shared out while the first changes hang
      child?.kill('SIGKILL');
      childLog = '';
      child = startDispatcher();
      const admin = svc.ctx.kafka.admin();
      await admin.connect();
      try {
        await eventually(async () => {
          const { groups } = await admin.describeGroups([svc.ctx.groups.dispatcher]);
          return groups[0].state === 'Stable' && groups[0].members.length === 2;
        }, 60_000, `the second dispatcher to join (${childLog})`);
      } finally {
        await admin.disconnect();
      }
      await db.query('update public.handoff set v = 2');
      await eventually(async () => [...Array(ROWS_H).keys()].every((i) => seen.get(String(i + 1)) === 2), 90_000, 'every second change');
      expect(violations).toEqual([]);
    } finally {
      child?.kill('SIGKILL');
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  }, 180_000);
});
