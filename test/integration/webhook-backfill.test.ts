// Backfills of database webhooks on the real stack (docs/delivery.md, "Backfills"): the rows already
// in a table are sent as BACKFILL events (all, or those matching a filter), with progress; a row
// changed while the backfill runs never reaches the receiver with an older state after a newer one;
// pause, resume and cancel work on the running worker; and a backfill whose dispatcher process is
// SIGKILLed in the middle ends with every row delivered, by another process, from the cursor the
// project database kept.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { childEnv, spawnService } from '../helpers/delivery-tools.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver } from '../helpers/receiver.js';

type Body = { type: string; record: { id: number; version: number; status: string } | null; old_record: { id: number; version: number } | null };

describe('webhook backfills', () => {
  let svc: TestService;
  let project: TestProject;
  let other: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32', ENDPOINT_WINDOW_INITIAL: '64' } });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('pro');
    other = await svc.project('pro');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  const call = (method: string, path: string, body?: unknown, who: TestProject = project) => svc.api(who.ownerToken, method, `/v1/projects/${project.ref}${path}`, body);
  const bodies = (path: string): Body[] => receiver.to(path).map((r) => JSON.parse(r.body));
  const backfillOf = async (hook: string, id: string) => (await call('GET', `/webhooks/${hook}/backfills/${id}`)).body;

  it('sends the rows already there as BACKFILL events, all or those matching a filter, with progress', async () => {
    await db.query(`create table public.customers (id int primary key, version int not null default 1, status text not null)`);
    await db.query(`insert into public.customers select g, 1, case when g % 4 = 0 then 'paid' else 'open' end from generate_series(1, 1200) g`);
    const hook = await call('POST', '/webhooks', { table: 'public.customers', events: ['INSERT', 'UPDATE'], url: `${receiver.url}/customers`, columns: ['id', 'version', 'status'] });
    expect(hook.status).toBe(201);
    expect(hook.body.ordering).toBe('row');
    const started = await call('POST', `/webhooks/${hook.body.id}/backfills`, { rate: 5000 });
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ state: 'running', rows_estimated: 1200, rate: 5000, filter: null, errors: 0 });
    // one at a time per webhook
    const again = await call('POST', `/webhooks/${hook.body.id}/backfills`);
    expect([again.status, again.body.code]).toEqual([409, 'backfill_running']);
    const done = await eventually(async () => {
      const b = await backfillOf(hook.body.id, started.body.id);
      return b.state === 'done' ? b : null;
    }, 60_000, 'the backfill to finish');
    expect(done).toMatchObject({ rows_done: 1200, rows_estimated: 1200, finished_at: expect.any(String) });
    expect(done.rows_per_second).toBeGreaterThan(0);
    await eventually(async () => new Set(bodies('/customers').map((b) => b.record!.id)).size === 1200, 60_000, 'every row delivered');
    const sent = bodies('/customers');
    expect(sent.every((b) => b.type === 'BACKFILL' && b.old_record === null && Object.keys(b.record!).sort().join() === 'id,status,version')).toBe(true);
    // the cursor row in the project database is gone once it is done
    expect((await db.query('select count(*)::int as n from base.backfills where id = $1', [started.body.id])).rows[0].n).toBe(0);

    // a second one, filtered: only the matching rows
    const paid = await call('POST', `/webhooks/${hook.body.id}/backfills`, { filter: { status: 'paid' } });
    expect(paid.status).toBe(201);
    expect(paid.body).toMatchObject({ rows_estimated: 300, filter: { status: 'paid' }, rate: 500 });
    await eventually(async () => (await backfillOf(hook.body.id, paid.body.id)).state === 'done', 60_000, 'the filtered backfill');
    await eventually(async () => bodies('/customers').length >= 1500, 30_000, 'the paid rows again');
    expect(bodies('/customers').slice(1200).every((b) => b.record!.status === 'paid')).toBe(true);
    const list = (await call('GET', `/webhooks/${hook.body.id}/backfills`)).body;
    expect(list.map((b: { id: string }) => b.id)).toEqual([paid.body.id, started.body.id]);
    const audit = (await call('GET', '/audit?limit=50')).body.filter((e: { action: string }) => e.action === 'webhook.backfill_start');
    expect(audit).toHaveLength(2);
  });

  it('never sends a row older after newer while the application keeps changing rows', async () => {
    await db.query(`create table public.balances (id int primary key, version int not null)`);
    await db.query(`insert into public.balances select g, 1 from generate_series(1, 2000) g`);
    const hook = await call('POST', '/webhooks', { table: 'public.balances', events: ['UPDATE'], url: `${receiver.url}/balances` });
    expect(hook.status).toBe(201);
    // 200 rows/s: 2,000 rows take 10 s, so the application below gets its hundred-odd updates in
    // while the backfill runs even on a loaded machine (at 600/s a clean-clone CI run saw only 80)
    const started = await call('POST', `/webhooks/${hook.body.id}/backfills`, { rate: 200 });
    expect(started.status).toBe(201);
    // the application: single-row and multi-row updates, in random order, all through the backfill
    const app = new pg.Client({ connectionString: project.databaseUrl });
    await app.connect();
    let updates = 0;
    try {
      while ((await backfillOf(hook.body.id, started.body.id)).state === 'running') {
        const ids = Array.from({ length: 1 + Math.floor(Math.random() * 5) }, () => 1 + Math.floor(Math.random() * 2000));
        await app.query('update public.balances set version = version + 1 where id = any($1)', [ids]);
        updates += ids.length;
      }
    } finally {
      await app.end();
    }
    expect(updates).toBeGreaterThan(100);
    const final = new Map((await db.query('select id, version from public.balances')).rows.map((r) => [r.id, r.version]));
    // every row's last state arrives ...
    await eventually(async () => {
      const last = new Map<number, number>();
      for (const b of bodies('/balances')) last.set(b.record!.id, Math.max(last.get(b.record!.id) ?? 0, b.record!.version));
      return [...final].every(([id, v]) => last.get(id) === v);
    }, 90_000, 'every row at its last version');
    // ... and per row, the versions the receiver saw never went back
    const seen = new Map<number, number>();
    let back = 0;
    for (const b of bodies('/balances')) {
      const id = b.record!.id;
      if ((seen.get(id) ?? 0) > b.record!.version) back++;
      seen.set(id, Math.max(seen.get(id) ?? 0, b.record!.version));
    }
    expect(back).toBe(0);
    expect(bodies('/balances').filter((b) => b.type === 'BACKFILL')).toHaveLength(2000);
  });

  it('pauses, resumes and cancels a running backfill; refuses what cannot work', async () => {
    await db.query(`create table public.slow (id int primary key, n int)`);
    await db.query(`insert into public.slow select g, g from generate_series(1, 3000) g`);
    const hook = await call('POST', '/webhooks', { table: 'public.slow', events: ['INSERT'], url: `${receiver.url}/slow` });
    const b = await call('POST', `/webhooks/${hook.body.id}/backfills`, { rate: 100 });
    expect(b.status).toBe(201);
    await eventually(async () => (await backfillOf(hook.body.id, b.body.id)).rows_done >= 100, 30_000, 'some progress');
    const paused = await call('POST', `/webhooks/${hook.body.id}/backfills/${b.body.id}/pause`);
    expect([paused.status, paused.body.state]).toEqual([200, 'paused']);
    // the chunk under way ends; then nothing moves
    await new Promise((r) => setTimeout(r, 1500));
    const at = (await backfillOf(hook.body.id, b.body.id)).rows_done;
    await new Promise((r) => setTimeout(r, 2000));
    expect((await backfillOf(hook.body.id, b.body.id)).rows_done).toBe(at);
    expect((await call('POST', `/webhooks/${hook.body.id}/backfills/${b.body.id}/pause`)).body.state).toBe('paused'); // again: as it is
    const resumed = await call('POST', `/webhooks/${hook.body.id}/backfills/${b.body.id}/resume`);
    expect([resumed.status, resumed.body.state]).toEqual([200, 'running']);
    await eventually(async () => (await backfillOf(hook.body.id, b.body.id)).rows_done > at, 30_000, 'progress after resuming');
    const cancelled = await call('POST', `/webhooks/${hook.body.id}/backfills/${b.body.id}/cancel`);
    expect([cancelled.status, cancelled.body.state]).toEqual([200, 'cancelled']);
    await new Promise((r) => setTimeout(r, 1500));
    const end = (await backfillOf(hook.body.id, b.body.id)).rows_done;
    await new Promise((r) => setTimeout(r, 1500));
    expect((await backfillOf(hook.body.id, b.body.id)).rows_done).toBe(end);
    expect(end).toBeLessThan(3000);
    // what was enqueued is delivered, nothing more; in primary-key order (one row each)
    await eventually(async () => receiver.to('/slow').length >= end, 30_000, 'the enqueued rows');
    await new Promise((r) => setTimeout(r, 1000));
    expect(receiver.to('/slow')).toHaveLength(end);
    expect(new Set(bodies('/slow').map((x) => x.record!.id))).toEqual(new Set(Array.from({ length: end }, (_, i) => i + 1)));
    const gone = await call('POST', `/webhooks/${hook.body.id}/backfills/${b.body.id}/resume`);
    expect([gone.status, gone.body.code]).toEqual([409, 'backfill_finished']);
    // a new one may start once none is under way; two asked at once: one starts, the other is
    // refused, and the refused one leaves no cursor behind in the project database
    const pair = await Promise.all([1, 2].map(() => call('POST', `/webhooks/${hook.body.id}/backfills`, { rate: 10_000, filter: { n: { lte: 10 } } })));
    expect(pair.map((r) => r.status).sort()).toEqual([201, 409]);
    const next = pair.find((r) => r.status === 201)!;
    expect(pair.find((r) => r.status === 409)!.body.code).toBe('backfill_running');
    expect(next.body.rows_estimated).toBe(10);
    const cursors = (await db.query('select id from base.backfills')).rows.map((r) => r.id);
    expect(cursors.filter((id) => id !== next.body.id)).toEqual([]);

    // refusals
    await db.query(`create table public.nokey (n int)`);
    const unordered = await call('POST', '/webhooks', { table: 'public.nokey', events: ['INSERT'], url: `${receiver.url}/x` });
    expect(unordered.body.ordering).toBe('none');
    const r1 = await call('POST', `/webhooks/${unordered.body.id}/backfills`);
    expect([r1.status, r1.body.code]).toEqual([400, 'backfill_needs_row_ordering']);
    const r2 = await call('POST', `/webhooks/${hook.body.id}/backfills`, { filter: { nope: 1 } });
    expect([r2.status, r2.body.code]).toEqual([400, 'column_not_found']);
    const r3 = await call('POST', `/webhooks/${hook.body.id}/backfills`, { rate: 0 });
    expect([r3.status, r3.body.code]).toEqual([400, 'validation_failed']);
    expect((await call('GET', `/webhooks/${hook.body.id}/backfills/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
    // another project's owner sees nothing and changes nothing
    for (const [m, p] of [['GET', `/webhooks/${hook.body.id}/backfills`], ['GET', `/webhooks/${hook.body.id}/backfills/${next.body.id}`], ['POST', `/webhooks/${hook.body.id}/backfills/${next.body.id}/cancel`], ['POST', `/webhooks/${hook.body.id}/backfills`]] as const) {
      expect((await call(m, p, m === 'POST' ? {} : undefined, other)).status, `${m} ${p}`).toBe(404);
    }
    await eventually(async () => (await backfillOf(hook.body.id, next.body.id)).state === 'done', 30_000, 'the small one to end');
    expect((await call('PATCH', `/webhooks/${hook.body.id}`, { enabled: false })).status).toBe(200);
    const r4 = await call('POST', `/webhooks/${hook.body.id}/backfills`);
    expect([r4.status, r4.body.code]).toEqual([409, 'webhook_disabled']);
  });
});

describe('a backfill whose dispatcher is killed', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  let child: ChildProcess | undefined;
  let childLog = '';
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32' } });
    // the projector here; the dispatcher (and its backfill worker) in a child process first
    workers = await startWorkers(svc.ctx, ['projector']);
    project = await svc.project('pro');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    child?.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  it('ends with every row delivered, from the cursor the project database kept', async () => {
    await db.query(`create table public.ledger (id bigint primary key, amount int)`);
    await db.query(`insert into public.ledger select g, g from generate_series(1, 4000) g`);
    const call = (method: string, path: string, body?: unknown) => svc.api(project.ownerToken, method, `/v1/projects/${project.ref}${path}`, body);
    const hook = await call('POST', '/webhooks', { table: 'public.ledger', events: ['INSERT'], url: `${receiver.url}/ledger` });
    expect(hook.status).toBe(201);
    child = spawnService(childEnv(svc, { ROLES: 'dispatcher' }), (c) => (childLog += c));
    const b = await call('POST', `/webhooks/${hook.body.id}/backfills`, { rate: 400 });
    expect(b.status).toBe(201);
    const get = async () => (await call('GET', `/webhooks/${hook.body.id}/backfills/${b.body.id}`)).body;
    await eventually(async () => (await get()).rows_done >= 800, 60_000, 'the child to be well into it').catch((err) => {
      console.log(childLog.slice(-3000));
      throw err;
    });
    child.kill('SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    const atKill = (await db.query('select rows_done from base.backfills where id = $1', [b.body.id])).rows[0].rows_done;
    expect(Number(atKill)).toBeLessThan(4000);
    // another process takes it over once the dead one's lease has run out
    workers.push(...(await startWorkers(svc.ctx, ['dispatcher'])));
    const done = await eventually(async () => {
      const x = await get();
      return x.state === 'done' ? x : null;
    }, 90_000, 'the backfill to finish in the new process');
    expect(done.rows_done).toBe(4000);
    await eventually(async () => new Set(receiver.to('/ledger').map((r) => JSON.parse(r.body).record.id)).size === 4000, 90_000, 'every row delivered');
    // each row was enqueued once: the same webhook-id may come twice (at least once), never two messages for one row
    const perRow = new Map<number, Set<string>>();
    for (const r of receiver.to('/ledger')) {
      const id = JSON.parse(r.body).record.id as number;
      perRow.set(id, (perRow.get(id) ?? new Set()).add(r.headers['webhook-id'] as string));
    }
    expect([...perRow.values()].filter((s) => s.size > 1)).toEqual([]);
  });
});

describe('a backfill gives way to live traffic', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    svc = await startTestService({
      roles: ['api'],
      env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32', BACKFILL_MAX_LAG: '100', CIRCUIT_FAILURE_THRESHOLD: '3', CIRCUIT_COOLDOWN: '500ms', CIRCUIT_COOLDOWN_MAX: '1s', RETRY_TIME_SCALE: '0.01' },
    });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('pro');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    receiver.release();
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  const call = (method: string, path: string, body?: unknown) => svc.api(project.ownerToken, method, `/v1/projects/${project.ref}${path}`, body);

  it('waits while the dispatchers are behind, and while its endpoint is failing; then finishes', async () => {
    await db.query(`create table public.stock (id int primary key, qty int)`);
    await db.query(`insert into public.stock select g, g from generate_series(1, 6000) g`);
    // a slow endpoint: every request hangs until released, so the dispatchers fall behind
    receiver.answer('/stock', { hang: true });
    const hook = await call('POST', '/webhooks', { table: 'public.stock', events: ['INSERT'], url: `${receiver.url}/stock`, timeout_ms: 60_000 });
    const b = await call('POST', `/webhooks/${hook.body.id}/backfills`, { rate: 1000 });
    expect(b.status).toBe(201);
    const get = async () => (await call('GET', `/webhooks/${hook.body.id}/backfills/${b.body.id}`)).body;
    const waiting = await eventually(async () => {
      const x = await get();
      return x.waiting?.includes('messages behind') ? x : null;
    }, 30_000, 'the backfill to wait for the dispatchers');
    expect(waiting.state).toBe('running');
    await new Promise((r) => setTimeout(r, 1500));
    const held = (await get()).rows_done;
    await new Promise((r) => setTimeout(r, 1500));
    expect((await get()).rows_done).toBe(held);
    expect(held).toBeLessThan(6000);

    // the endpoint now fails fast: its circuit opens, and the backfill waits for it
    receiver.answer('/stock', { status: 503 });
    receiver.release(503);
    await eventually(async () => (await get()).waiting?.includes('circuit is open'), 30_000, 'the backfill to wait for the circuit');
    const atOpen = (await get()).rows_done;
    await new Promise((r) => setTimeout(r, 1500));
    expect((await get()).rows_done).toBe(atOpen);

    // the endpoint recovers: the circuit closes on a probe, the backfill goes on and every row arrives
    receiver.answer('/stock', { status: 200 });
    const done = await eventually(async () => {
      const x = await get();
      return x.state === 'done' ? x : null;
    }, 90_000, 'the backfill to finish');
    expect(done).toMatchObject({ rows_done: 6000, waiting: null });
    await eventually(async () => new Set(receiver.to('/stock').filter((r) => JSON.parse(r.body).record).map((r) => JSON.parse(r.body).record.id)).size === 6000, 120_000, 'every row delivered');
  });
});
