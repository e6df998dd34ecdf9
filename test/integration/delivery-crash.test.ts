// A dispatcher killed with SIGKILL mid-stream loses nothing and sends no recorded outcome twice.
// The dispatcher runs as a real child process (npm start's entry point with ROLES=dispatcher). One
// message hangs at the head of its partition, so that partition's commit point cannot pass it: the
// messages behind it are recorded (ledger) but uncommitted when the process dies, and the restarted
// dispatcher is guaranteed to be handed them again — it must skip them, not send them again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver } from '../helpers/receiver.js';
import { childEnv, spawnService, uncommittedCount } from '../helpers/delivery-tools.js';

const N = 300;

describe('a dispatcher killed mid-stream', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let projector: Worker[] = [];
  let child: ChildProcess | undefined;
  let childLog = '';
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32' } });
    projector = await startWorkers(svc.ctx, ['projector']);
    project = await svc.project('pro');
    expect((await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/outbox/enable`)).status).toBeLessThan(300);
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    child?.kill('SIGKILL');
    await Promise.all(projector.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  function startDispatcher(): ChildProcess {
    const env = childEnv(svc, {
      ROLES: 'dispatcher',
      DISPATCH_COMMIT_INTERVAL: '300ms',
      // the killed process's partitions are reassigned once its session times out
      DISPATCH_SESSION_TIMEOUT: '6s',
    });
    return spawnService(env, (c) => (childLog += c));
  }

  const enqueue = async (path: string, timeoutMs: number | null = null) =>
    (await db.query(`select base.http_request('POST', $1, '{}'::jsonb, null, null, $2) as id`, [`${receiver.url}${path}`, timeoutMs])).rows[0].id as string;

  it('delivers every message after a restart, and never sends a recorded outcome again', async () => {
    receiver.answer('/hang', { hang: true });
    child = startDispatcher();
    const hung = await enqueue('/hang', 60_000);
    await eventually(async () => receiver.hanging === 1, 60_000, `the dispatcher to send the hanging request (log: ${childLog})`);

    const ids = new Map<string, string>(); // path -> message id
    for (let t = 0; t < N / 50; t++) {
      await db.query('begin');
      for (let i = t * 50; i < (t + 1) * 50; i++) ids.set(`/m/${i}`, await enqueue(`/m/${i}`));
      await db.query('commit');
    }
    await eventually(async () => receiver.requests.filter((r) => r.path.startsWith('/m/')).length >= N / 2, 60_000, 'half of the stream');
    // give the dispatcher time to commit what it can (everything but the hung partition)
    await new Promise((r) => setTimeout(r, 1000));
    child.kill('SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    child = undefined;

    const recordedBeforeKill = new Set<string>(
      (await svc.ctx.db.query('select message_id from delivery_ledger where final')).rows.map((r) => r.message_id),
    );
    expect(recordedBeforeKill.has(hung)).toBe(false);
    // Non-vacuous: some recorded messages sit behind the commit point and will be handed out again.
    const uncommitted = await uncommittedCount(svc, svc.ctx.groups.dispatcher, svc.ctx.topics.outbox);
    expect(uncommitted).toBeGreaterThan(1);

    receiver.answer('/hang', { status: 200 });
    child = startDispatcher();
    await eventually(
      async () => {
        const r = await svc.ctx.db.query(`select count(*)::int as n from deliveries where project_ref = $1 and status = 'delivered'`, [project.ref]);
        return r.rows[0].n === N + 1;
      },
      120_000,
      'every message delivered after the restart',
    );

    // every message reached the receiver; those recorded before the kill exactly once
    for (const [path, id] of ids) {
      const n = receiver.to(path).length;
      expect({ path, seen: n >= 1 }).toEqual({ path, seen: true });
      if (recordedBeforeKill.has(id)) expect({ path, n }).toEqual({ path, n: 1 });
    }
    expect(recordedBeforeKill.size).toBeGreaterThan(N / 2 - 1);
    // the hung message was in flight when the process died: it is attempted again and delivered
    expect(receiver.to('/hang').length).toBe(2);

    // a graceful stop finishes, commits and leaves the group
    child.kill('SIGTERM');
    const code = await new Promise((r) => child!.once('exit', r));
    child = undefined;
    expect(code).toBe(0);
  });
});

