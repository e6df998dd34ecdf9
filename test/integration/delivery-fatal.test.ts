// A consumer that crashes for good must not leave an idle process behind: every worker's consumer
// reports a crash kafkajs will not restart from to onFatal (main.ts exits on it). Provoked for real:
// a foreign member already holds each group with a protocol ours does not speak, so the broker
// refuses our join with INCONSISTENT_GROUP_PROTOCOL, a non-retriable error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PartitionAssigners, type Consumer } from 'kafkajs';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestService } from '../helpers/service.js';

describe('workers: a consumer crashed for good is reported as fatal', () => {
  let svc: TestService;
  const foreign: Consumer[] = [];
  let workers: Worker[] = [];

  beforeAll(async () => {
    svc = await startTestService({ roles: ['api'] });
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all(foreign.map((c) => c.disconnect()));
    await svc?.stop();
  });

  it('reports the dispatcher, retry, callbacks and projector consumers', async () => {
    const { ctx } = svc;
    const groups = [
      [ctx.groups.dispatcher, [ctx.topics.outbox]],
      [ctx.groups.retry, ctx.topics.retry.map((r) => r.topic)],
      [ctx.groups.callbacks, [ctx.topics.events]],
      [ctx.groups.projector, [ctx.topics.events]],
    ] as const;
    for (const [groupId, topics] of groups) {
      const c = ctx.kafka.consumer({ groupId, partitionAssigners: [(cfg) => ({ ...PartitionAssigners.roundRobin(cfg), name: 'Foreign' })] });
      foreign.push(c);
      await c.connect();
      for (const topic of topics) await c.subscribe({ topic });
      let joined = false;
      c.on(c.events.GROUP_JOIN, () => (joined = true));
      await c.run({ eachMessage: async () => {} });
      await eventually(async () => joined, 30_000, `the foreign member to join ${groupId}`);
    }

    const fatal: { worker: string; error: string }[] = [];
    workers = await startWorkers(ctx, ['dispatcher', 'projector'], (err, worker) => fatal.push({ worker, error: (err as Error & { type?: string }).type ?? err.message }));
    await eventually(async () => fatal.length >= 4, 60_000, 'four fatal reports');
    expect(fatal.map((f) => f.worker).sort()).toEqual(['callbacks', 'dispatcher', 'projector', 'retry-dispatcher']);
    expect(new Set(fatal.map((f) => f.error))).toEqual(new Set(['INCONSISTENT_GROUP_PROTOCOL']));
  });
});
