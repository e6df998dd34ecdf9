// The retry side of the dispatcher role: one consumer group (<prefix>.retry) over every retry topic
// of the ladder, running the same dispatch consumer as the main topic (bounded in flight, ordered
// commits, ledger dedup) with a DuePause that pauses a partition until its head record is due, and
// handing due records to the same attempt pipeline.
import type { AppContext } from '../../context.js';
import { startDispatchConsumer } from './dispatch-consumer.js';
import type { AttemptPipeline } from '../attempt/pipeline.js';
import { DuePause } from './due-pause.js';
import type { OnFatal, Worker } from '../worker.js';


export async function startRetryConsumer(ctx: AppContext, pipeline: AttemptPipeline, onFatal?: OnFatal): Promise<Worker> {
  const due = new DuePause();
  const consumer = await startDispatchConsumer({
    ctx,
    name: 'retry-dispatcher',
    groupId: ctx.groups.retry,
    topics: ctx.topics.retry.map((r) => r.topic),
    pipeline,
    concurrency: ctx.cfg.DISPATCH_CONCURRENCY,
    commitIntervalMs: ctx.cfg.DISPATCH_COMMIT_INTERVAL,
    untilDue: due.pauseUntilDue,
    onFatal,
  });
  return {
    name: 'retry-dispatcher',
    async stop() {
      due.close();
      await consumer.stop();
    },
  };
}
