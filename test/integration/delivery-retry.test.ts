// The failure path end to end on the real pipeline, with the ladder's clock scaled down by
// RETRY_TIME_SCALE (30s → 6 ms … 6h → 4.3 s): retries up the ladder, Retry-After, dead letters,
// the attempt budget, callbacks as base_callback, manual retry and bulk replay (API and admin).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { ScriptedReceiver } from '../helpers/scripted-receiver.js';
import { readTopic, runAdmin } from '../helpers/delivery-tools.js';

const SCALE = 0.0002;

describe('the retry ladder, dead letters, callbacks and recovery', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const a = new ScriptedReceiver();
  const b = new ScriptedReceiver();
  // The target that always fails has a host of its own: an endpoint of base.http_request is a host,
  // and its eight 503s with the 500 and the 429 before them are ten faults in the circuit's window,
  // which opened a's circuit and held the callback test's requests for the 30 s cool-down.
  const failing = new ScriptedReceiver();

  beforeAll(async () => {
    await a.start('127.0.0.2');
    await b.start('127.0.0.3');
    await failing.start('127.0.0.2');
    const env = { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/31', RETRY_TIME_SCALE: String(SCALE), CALLBACK_MAX_ATTEMPTS: '2', DISPATCH_COMMIT_INTERVAL: '300ms' };
    svc = await startTestService({ roles: ['api'], env });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('pro');
    expect((await call('POST', '/outbox/enable')).status).toBeLessThan(300);
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query(`
      create table public.cb_log (n serial primary key, payload jsonb not null);
      create function public.on_done(p jsonb) returns void language sql security definer as $$ insert into public.cb_log (payload) values (p) $$;
      revoke all on function public.on_done(jsonb) from public;
      grant execute on function public.on_done(jsonb) to base_callback;
      create function public.wrong_role(p jsonb) returns void language sql security definer as $$ insert into public.cb_log (payload) values (p) $$;
      revoke all on function public.wrong_role(jsonb) from public;
      grant execute on function public.wrong_role(jsonb) to anon;`);
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await a.stop();
    await b.stop();
    await failing.stop();
  });

  const call = (method: string, path: string, body?: unknown, token: string | null = project.ownerToken) =>
    svc.api(token, method, `/v1/projects/${project.ref}${path}`, body);

  const enqueue = async (url: string, callback: string | null = null) =>
    (await db.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"n":1}'::jsonb, $2, 5000) as id`, [url, callback])).rows[0].id as string;

  const delivery = async (id: string) => (await call('GET', `/outbox/deliveries/${id}`)).body;
  const settled = (id: string, status: string, run = 1, timeoutMs = 60_000) =>
    eventually(
      async () => {
        const d = await delivery(id);
        return d?.status === status && d.run === run ? d : null;
      },
      timeoutMs,
      `${id} to be ${status} (run ${run})`,
    );

  const deadLetters = async (id: string) =>
    (await readTopic(svc, svc.ctx.topics.dead))
      .filter((m) => m.key?.toString() === id)
      .map((m) => ({ reason: m.headers?.['dead-reason']?.toString(), last: JSON.parse(m.headers!['last-outcome']!.toString()), attempt: Number(m.headers?.attempt?.toString()) }));

  it('retries a 500 and delivers on the 200 of the second attempt', async () => {
    a.script('/500-then-200', { status: 500 }, { status: 200, body: 'fine' });
    const id = await enqueue(`${a.url}/500-then-200`);
    const d = await settled(id, 'delivered');
    expect(d).toMatchObject({ attempts: 2, last_http_status: 200, next_attempt_at: null });
    expect(d.attempt_history.map((h: any) => [h.attempt, h.outcome, h.http_status])).toEqual([
      [1, 'failed', 500],
      [2, 'delivered', 200],
    ]);
    const hits = a.to('/500-then-200');
    expect(hits).toHaveLength(2);
    // the first step's delay (30s scaled) separates the attempts
    expect(hits[1].at - hits[0].at).toBeGreaterThanOrEqual(30_000 * SCALE);
  });

  it('waits at least as long as a 429 Retry-After asks', async () => {
    a.script('/429', { status: 429, headers: { 'retry-after': '2' } }, { status: 200 });
    const id = await enqueue(`${a.url}/429`);
    const d = await settled(id, 'delivered');
    expect(d.attempts).toBe(2);
    const hits = a.to('/429');
    expect(hits).toHaveLength(2);
    expect(hits[1].at - hits[0].at).toBeGreaterThanOrEqual(2000);
  });

  it('ends a 410 dead at once, with a dead letter carrying the last outcome', async () => {
    a.script('/gone', { status: 410 });
    const id = await enqueue(`${a.url}/gone`);
    const d = await settled(id, 'dead');
    expect(d).toMatchObject({ attempts: 1, last_http_status: 410 });
    expect(a.to('/gone')).toHaveLength(1);
    const letters = await deadLetters(id);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ reason: 'permanent', attempt: 1, last: { outcome: 'dead', http_status: 410, error: 'HTTP 410' } });
  });

  it('ends a target that always fails dead after 8 attempts, one ladder step apart', async () => {
    failing.script('/always-503', { status: 503 });
    const id = await enqueue(`${failing.url}/always-503`);
    const d = await settled(id, 'dead');
    expect(d.attempts).toBe(8);
    expect(d.attempt_history.map((h: any) => h.outcome)).toEqual(Array(8).fill('failed'));
    const hits = failing.to('/always-503');
    expect(hits).toHaveLength(8);
    const delays = svc.cfg.retryDelaysMs;
    for (let i = 1; i < 8; i++) expect(hits[i].at - hits[i - 1].at).toBeGreaterThanOrEqual(delays[i - 1] * SCALE);
    const letters = await deadLetters(id);
    expect(letters[0]).toMatchObject({ reason: 'attempts', attempt: 8, last: { outcome: 'failed', http_status: 503 } });
    // nothing further is attempted
    await new Promise((r) => setTimeout(r, 6 * 3_600_000 * SCALE + 500));
    expect(failing.to('/always-503')).toHaveLength(8);
  });

  it('calls the callback once as base_callback with the payload of a delivered and of a dead delivery', async () => {
    a.script('/cb-ok', { status: 200, body: 'thanks' });
    a.script('/cb-404', { status: 404, body: 'no such thing' });
    const ok = await enqueue(`${a.url}/cb-ok`, 'public.on_done');
    const dead = await enqueue(`${a.url}/cb-404`, 'Public.On_Done'); // unquoted names fold to lower case
    for (const id of [ok, dead]) {
      const d = await eventually(async () => {
        const x = await delivery(id);
        return x?.callback?.status === 'ok' ? x : null;
      }, 60_000, `the callback of ${id}`);
      expect(d.callback).toMatchObject({ status: 'ok', attempts: 1, error: null });
    }
    const rows = (await db.query(`select payload from public.cb_log where payload->>'id' = any($1)`, [[ok, dead]])).rows.map((r) => r.payload);
    expect(rows).toHaveLength(2);
    expect(rows.find((p) => p.id === ok)).toEqual({ id: ok, status: 'delivered', delivered: true, body: 'thanks', error: null, attempts: 1 });
    expect(rows.find((p) => p.id === dead)).toEqual({ id: dead, status: 'dead', delivered: false, body: 'no such thing', error: 'HTTP 404', attempts: 1 });
    expect((await delivery(ok)).status).toBe('delivered');
  });

  it('records a callback not granted to base_callback (or missing) as failed, retried a bounded number of times, without touching the status', async () => {
    a.script('/cb-wrong', { status: 200 });
    const wrong = await enqueue(`${a.url}/cb-wrong`, 'public.wrong_role');
    const missing = await enqueue(`${a.url}/cb-wrong`, 'public.not_there');
    const failed = async (id: string) =>
      eventually(async () => {
        const x = await delivery(id);
        return x?.callback?.status === 'failed' ? x : null;
      }, 60_000, `the callback of ${id} to fail`);
    const w = await failed(wrong);
    expect(w.status).toBe('delivered');
    expect(w.callback).toMatchObject({ function: 'public.wrong_role', attempts: 2 });
    expect(w.callback.error).toMatch(/permission denied/);
    const m = await failed(missing);
    expect(m.callback.error).toMatch(/does not exist/);
    expect((await db.query(`select count(*)::int as n from public.cb_log where payload->>'id' = $1`, [wrong])).rows[0].n).toBe(0);
    const calls = await svc.ctx.db.query('select attempts, status from delivery_callbacks where message_id = $1', [wrong]);
    expect(calls.rows).toEqual([{ attempts: 2, status: 'failed' }]);
  });

  it('retries a dead delivery by hand as a new run once the receiver recovers', async () => {
    a.script('/recovers', { status: 410 }, { status: 200 });
    const id = await enqueue(`${a.url}/recovers`);
    await settled(id, 'dead');
    const r = await call('POST', `/outbox/deliveries/${id}/retry`);
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ id, status: 'pending', run: 2 });
    const d = await settled(id, 'delivered', 2);
    expect(d.attempts).toBe(1);
    expect(d.attempt_history.map((h: any) => [h.run, h.attempt, h.outcome])).toEqual([
      [1, 1, 'dead'],
      [2, 1, 'delivered'],
    ]);
    expect(a.to('/recovers')).toHaveLength(2);

    const again = await call('POST', `/outbox/deliveries/${id}/retry`);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('delivery_not_retryable');
    const unknown = await call('POST', `/outbox/deliveries/00000000-0000-4000-8000-000000000000/retry`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('delivery_not_found');
    expect((await call('POST', `/outbox/deliveries/${id}/retry`, undefined, null)).status).toBe(401);
    expect((await call('POST', `/outbox/deliveries/${id}/retry`, { force: true })).status).toBe(400);
  });

  it('sends a dead delivery once when two retries of it race (a double click, two operators)', async () => {
    a.script('/raced', { status: 410 }, { status: 200 }, { status: 200 });
    const id = await enqueue(`${a.url}/raced`);
    await settled(id, 'dead');
    const [one, two] = await Promise.all([call('POST', `/outbox/deliveries/${id}/retry`), call('POST', `/outbox/deliveries/${id}/retry`)]);
    // one of them takes the run; the other is told the delivery was retried already
    expect([one.status, two.status].sort()).toEqual([202, 409]);
    const lost = one.status === 409 ? one : two;
    expect(lost.body.code).toBe('delivery_not_retryable');
    const d = await settled(id, 'delivered', 2);
    expect(d.attempt_history.map((h: any) => [h.run, h.attempt, h.outcome])).toEqual([
      [1, 1, 'dead'],
      [2, 1, 'delivered'],
    ]);
    // the dead send and one retry: no second copy of run 2, however long we look
    await new Promise((r) => setTimeout(r, 2_000));
    expect(a.to('/raced')).toHaveLength(2);
    // and the race's loser put no second copy of run 2 on the log
    const run2 = (await readTopic(svc, svc.ctx.topics.outbox)).filter((m) => m.headers?.id?.toString() === id && m.headers?.run?.toString() === '2');
    expect(run2).toHaveLength(1);
  });

  it('replays the dead deliveries matching a filter, by API and by the admin command', async () => {
    const onA: string[] = [];
    const onB: string[] = [];
    const since = new Date(Date.now() - 1000).toISOString();
    for (let i = 0; i < 4; i++) {
      a.script(`/outage/${i}`, { status: 404 }, { status: 200 });
      onA.push(await enqueue(`${a.url}/outage/${i}`));
    }
    for (let i = 0; i < 2; i++) {
      b.script(`/outage/${i}`, { status: 404 }, { status: 200 });
      onB.push(await enqueue(`${b.url}/outage/${i}`));
    }
    for (const id of [...onA, ...onB]) await settled(id, 'dead');

    expect((await call('POST', '/outbox/replay', { status: 'delivered' })).status).toBe(400);
    expect((await call('POST', '/outbox/replay', { hots: '127.0.0.2' })).status).toBe(400);
    const none = await call('POST', '/outbox/replay', { since: new Date(Date.now() + 3_600_000).toISOString() });
    expect(none.body).toMatchObject({ matched: 0, replayed: 0 });

    const r = await call('POST', '/outbox/replay', { status: 'dead', host: '127.0.0.2', since });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ matched: 4, replayed: 4, not_found: 0 });
    for (const id of onA) await settled(id, 'delivered', 2);
    for (const id of onB) expect((await delivery(id)).status).toBe('dead');

    const out = await runAdmin(svc, ['replay', '--ref', project.ref, '--host', '127.0.0.3', '--since', since]);
    expect(out).toMatchObject({ matched: 2, replayed: 2, not_found: 0 });
    for (const id of onB) await settled(id, 'delivered', 2);
    for (let i = 0; i < 2; i++) expect(b.to(`/outage/${i}`)).toHaveLength(2);
  });
});
