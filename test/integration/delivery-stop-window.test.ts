// A dispatcher stopped (SIGTERM) while messages wait for their endpoint's window: those messages
// were never sent, so they must record nothing. They stay uncommitted and the next dispatcher sends
// each once, as its first attempt. Before the fix, each was recorded as a failed attempt ("internal
// error during the attempt") whose retry was published and committed past: a false failure in the
// history at every shutdown, a used-up attempt, and, when the next owner had read the record before
// the commit, a second request for one message (the 3 hits of CI's delivery-retry-dispatchers run).
// And the next message of a key must not go ahead of one the stop cut off: it waits, uncommitted,
// and the next dispatcher sends the two in order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { childEnv, spawnService } from '../helpers/delivery-tools.js';

const N = 6;

/** Answers 200, but holds every response open while `holding` (the window stays full meanwhile). */
class HoldingReceiver {
  readonly hits: string[] = [];
  holding = true;
  readonly #held: http.ServerResponse[] = [];
  #server!: http.Server;
  url = '';

  async start(): Promise<void> {
    this.#server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        this.hits.push(req.url ?? '/');
        if (this.holding) this.#held.push(res);
        else res.end('ok');
      });
    });
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.2', r));
    this.url = `http://127.0.0.2:${(this.#server.address() as AddressInfo).port}`;
  }

  release(): void {
    this.holding = false;
    for (const res of this.#held.splice(0)) res.end('ok');
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((r) => this.#server.close(r));
  }
}

describe('a dispatcher stopped while messages wait for their endpoint', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let projector: Worker[] = [];
  const children: { p: ChildProcess; log: string }[] = [];
  const receiver = new HoldingReceiver();

  beforeAll(async () => {
    await receiver.start();
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32' } });
    projector = await startWorkers(svc.ctx, ['projector']);
    project = await svc.project('pro');
    expect((await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/outbox/enable`)).status).toBeLessThan(300);
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    for (const c of children) c.p.kill('SIGKILL');
    await Promise.all(projector.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  // A message waiting for the window for PENDING_AFTER_MS (1 s) is published as pending: the proof
  // that the dispatcher took it and waits (a fixed sleep assumed capture and fetch fit in 2 s).
  const pending = async (ids: string[]) =>
    (await svc.ctx.db.query(`select count(*)::int as n from deliveries where project_ref = $1 and id = any($2::uuid[]) and status = 'pending'`, [project.ref, ids])).rows[0].n === ids.length;

  function start() {
    const c = { p: undefined as unknown as ChildProcess, log: '' };
    // a window of one request per endpoint: the first message is sent, the others wait for it
    c.p = spawnService(
      childEnv(svc, { ROLES: 'dispatcher', LOG_LEVEL: 'info', ENDPOINT_WINDOW_INITIAL: '1', ENDPOINT_WINDOW_MAX: '1', DISPATCH_COMMIT_INTERVAL: '300ms' }),
      (s) => (c.log += s),
    );
    children.push(c);
    return c;
  }

  it('records nothing for them, and the next dispatcher sends each once, as its first attempt', async () => {
    const a = start();
    await eventually(async () => a.log.includes('service ready'), 90_000, `the first dispatcher to start (${a.log.slice(-500)})`);
    await db.query('begin');
    const ids: string[] = [];
    for (let i = 0; i < N; i++) ids.push((await db.query(`select base.http_request('POST', $1, '{}'::jsonb, '{}'::jsonb, null, 30000) as id`, [`${receiver.url}/w/${i}`])).rows[0].id);
    await db.query('commit');
    // one request is open at the receiver, the other five wait in the dispatcher for the window
    await eventually(async () => receiver.hits.length === 1, 60_000, 'the first request');
    await eventually(async () => pending(ids.filter((_, i) => receiver.hits[0] !== `/w/${i}`)), 60_000, 'the other five waiting for the window (pending)');
    a.p.kill('SIGTERM');
    await eventually(async () => a.log.includes('shutting down'), 30_000, 'the dispatcher to begin its stop');
    // the drain waits for the open request; answering it opens the window to a waiting message,
    // which must now give up without a request
    receiver.release();
    expect(await new Promise((r) => a.p.once('exit', r))).toBe(0);
    expect(receiver.hits).toHaveLength(1);

    const b = start();
    await eventually(
      async () => (await svc.ctx.db.query(`select count(*)::int as n from deliveries where project_ref = $1 and status = 'delivered'`, [project.ref])).rows[0].n === N,
      120_000,
      `every message delivered (a: ${a.log.slice(-1500)} b: ${b.log.slice(-1500)})`,
    );
    // each message exactly once at the receiver, and no attempt but the one that was made
    expect([...receiver.hits].sort()).toEqual([...Array(N).keys()].map((i) => `/w/${i}`).sort());
    const attempts = await svc.ctx.db.query(`select outcome, attempt, error from delivery_attempts where project_ref = $1 order by attempt`, [project.ref]);
    expect(attempts.rows.map((r) => ({ outcome: r.outcome, attempt: r.attempt, error: r.error }))).toEqual(
      Array.from({ length: N }, () => ({ outcome: 'delivered', attempt: 1, error: null })),
    );
    // the stop says what it did with them, and not as an error
    expect(a.log).not.toContain('delivery attempt crashed');
    expect(a.log).toContain('attempt cut off by the stop');
    b.p.kill('SIGTERM');
    expect(await new Promise((r) => b.p.once('exit', r))).toBe(0);
  });

  it('does not let the next message of a key go ahead of one it cut off', async () => {
    receiver.hits.length = 0;
    receiver.holding = true;
    const delivered = async () => (await svc.ctx.db.query(`select count(*)::int as n from deliveries where project_ref = $1 and status = 'delivered'`, [project.ref])).rows[0].n as number;
    const before = await delivered();
    const a = start();
    await eventually(async () => a.log.includes('service ready'), 90_000, `the dispatcher to start (${a.log.slice(-500)})`);
    // an unordered request takes the endpoint's window of one and is held open
    await db.query(`select base.http_request('POST', $1, '{}'::jsonb, '{}'::jsonb, null, 30000)`, [`${receiver.url}/x`]);
    await eventually(async () => receiver.hits.length === 1, 60_000, 'the request that holds the window');
    // then two messages of one key: the first waits for the window, the second behind it
    await db.query('begin');
    const k1 = (await db.query(`select base.http_request('POST', $1, '{}'::jsonb, '{}'::jsonb, null, 30000, 'k') as id`, [`${receiver.url}/k/1`])).rows[0].id;
    await db.query(`select base.http_request('POST', $1, '{}'::jsonb, '{}'::jsonb, null, 30000, 'k')`, [`${receiver.url}/k/2`]);
    await db.query('commit');
    await eventually(async () => pending([k1]), 60_000, '/k/1 waiting for the window (pending)');
    a.p.kill('SIGTERM');
    await eventually(async () => a.log.includes('shutting down'), 30_000, 'the dispatcher to begin its stop');
    // the held request ends: the window opens to /k/1, which the stop cuts off; /k/2 must not go
    receiver.release();
    expect(await new Promise((r) => a.p.once('exit', r))).toBe(0);
    expect(a.log).toContain('attempt cut off by the stop');
    expect(receiver.hits).toEqual(['/x']);

    const b = start();
    await eventually(async () => (await delivered()) === before + 3, 120_000, `all three delivered (a: ${a.log.slice(-1500)} b: ${b.log.slice(-1500)})`);
    expect(receiver.hits).toEqual(['/x', '/k/1', '/k/2']);
    b.p.kill('SIGTERM');
    expect(await new Promise((r) => b.p.once('exit', r))).toBe(0);
  });
});
