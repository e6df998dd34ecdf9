// The retry side of the dispatcher role: one consumer group (<prefix>.retry) over every retry topic
// of the ladder, running the same dispatch consumer as the main topic (bounded in flight, ordered
// commits, ledger dedup) with a DueGate that pauses a partition until its head record is due, and
// handing due records to the same attempt pipeline.
import type { AppContext } from '../../context.js';
import { startDispatchConsumer } from './dispatch-consumer.js';
import type { AttemptPipeline } from '../attempt/pipeline.js';
import { DueGate } from './due-gate.js';
import type { OnFatal, Worker } from '../worker.js';

export const retryGroup = (ctx: Pick<AppContext, 'cfg'>) => `${ctx.cfg.TOPIC_PREFIX}.retry`;

export async function startRetryConsumer(ctx: AppContext, pipeline: AttemptPipeline, onFatal?: OnFatal): Promise<Worker> {
  const gate = new DueGate();
  const consumer = await startDispatchConsumer({
    ctx,
    name: 'retry-dispatcher',
    groupId: retryGroup(ctx),
    topics: ctx.topics.retry.map((r) => r.topic),
    pipeline,
    concurrency: ctx.cfg.DISPATCH_CONCURRENCY,
    commitIntervalMs: ctx.cfg.DISPATCH_COMMIT_INTERVAL,
    gate: gate.hold,
    onFatal,
  });
  return {
    name: 'retry-dispatcher',
    async stop() {
      gate.close();
      await consumer.stop();
    },
  };
}
