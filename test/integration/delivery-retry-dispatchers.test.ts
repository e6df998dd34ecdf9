// Several dispatchers: two `ROLES=dispatcher` processes in one consumer group share the outbox and
// retry partitions, and when one stops the other takes over its partitions (main and retry topics)
// with nothing lost and nothing delivered twice. Every fifth message fails once, so the ladder is
// part of the hand-over.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';
import { AssignerProtocol } from 'kafkajs';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { ScriptedReceiver } from '../helpers/scripted-receiver.js';
import { childEnv, spawnService } from '../helpers/delivery-tools.js';

const N = 300;

describe('two dispatcher processes', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let projector: Worker[] = [];
  const children: { name: string; p: ChildProcess; log: string }[] = [];
  const receiver = new ScriptedReceiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    const env = { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32', RETRY_TIME_SCALE: '0.001' };
    svc = await startTestService({ roles: ['api'], env });
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

  function start(name: string) {
    const c = { name, p: undefined as unknown as ChildProcess, log: '' };
    // A session timeout of 20 s, not 6: the hand-over tested here is a graceful one (SIGTERM: the
    // member leaves the group at once), and on two cores beside the rest of npm test a child's
    // heartbeat could miss 6 s, evicting a live member mid-attempt, whose record the other then sent
    // again (seen as 3 hits for /m/0 in 2 of ~10 full runs; at least once, as documented, but not
    // the hand-over this test is about)
    c.p = spawnService(childEnv(svc, { ROLES: 'dispatcher', LOG_LEVEL: 'info', DISPATCH_COMMIT_INTERVAL: '300ms', DISPATCH_SESSION_TIMEOUT: '20s' }), (s) => (c.log += s));
    children.push(c);
    return c;
  }

  /** member → partitions it holds, per group */
  async function assignments(groupId: string): Promise<number[]> {
    const admin = svc.ctx.kafka.admin();
    await admin.connect();
    try {
      const { groups } = await admin.describeGroups([groupId]);
      const g = groups[0];
      if (g.state !== 'Stable') return [];
      return g.members.map((m) => {
        const a = AssignerProtocol.MemberAssignment.decode(m.memberAssignment);
        return Object.values(a?.assignment ?? {}).reduce((n, ps) => n + ps.length, 0);
      });
    } finally {
      await admin.disconnect();
    }
  }

  const partitions = () => ({ [svc.ctx.groups.dispatcher]: svc.cfg.OUTBOX_PARTITIONS, [svc.ctx.groups.retry]: svc.cfg.OUTBOX_PARTITIONS * svc.ctx.topics.retry.length });

  it('share the partitions, and one takes over all of them when the other stops, losing nothing', async () => {
    const a = start('a');
    const b = start('b');
    for (const [group, total] of Object.entries(partitions())) {
      await eventually(
        async () => {
          const m = await assignments(group);
          return m.length === 2 && m.every((n) => n > 0) && m[0] + m[1] === total;
        },
        90_000,
        `${group} to be shared by two members (a: ${a.log.slice(-500)} b: ${b.log.slice(-500)})`,
      );
    }

    for (let i = 0; i < N; i++) receiver.script(`/m/${i}`, ...(i % 5 === 0 ? [{ status: 503 }, { status: 200 }] : [{ status: 200 }]));
    const enqueueBatch = async (from: number, to: number) => {
      await db.query('begin');
      for (let i = from; i < to; i++) await db.query(`select base.http_request('POST', $1, '{}'::jsonb, '{}'::jsonb, null, 5000)`, [`${receiver.url}/m/${i}`]);
      await db.query('commit');
    };
    await enqueueBatch(0, N / 2);
    await eventually(async () => receiver.hits.length >= N / 4, 60_000, 'a quarter of the stream');

    a.p.kill('SIGTERM');
    expect(await new Promise((r) => a.p.once('exit', r))).toBe(0);
    await enqueueBatch(N / 2, N);
    for (const [group, total] of Object.entries(partitions())) {
      await eventually(async () => {
        const m = await assignments(group);
        return m.length === 1 && m[0] === total;
      }, 60_000, `${group} to be taken over by the remaining member`);
    }

    await eventually(
      async () => (await svc.ctx.db.query(`select count(*)::int as n from deliveries where project_ref = $1 and status = 'delivered'`, [project.ref])).rows[0].n === N,
      120_000,
      'every message delivered',
    );
    const wrong = [...Array(N).keys()].flatMap((i) => {
      const hits = receiver.to(`/m/${i}`).length;
      return hits === (i % 5 === 0 ? 2 : 1) ? [] : [{ i, hits }];
    });
    // on a failure, what the two processes said (the hand-over, the commits, any eviction)
    if (wrong.length > 0) for (const c of children) console.log(`--- ${c.name}\n${c.log}`);
    expect(wrong).toEqual([]);
    b.p.kill('SIGTERM');
    expect(await new Promise((r) => b.p.once('exit', r))).toBe(0);
  });
});
