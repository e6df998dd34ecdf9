// The background roles of this process (dispatcher, projector), started per ROLES. The dispatcher
// role runs the main outbox consumer, the retry consumer and callbacks (retry-consumer.ts),
// housekeeping of the ledger (housekeeping.ts) and the connector supervisor (outbox/supervisor.ts).
import type { AppContext } from '../context.js';
import { startDispatchConsumer } from './dispatcher.js';
import { logFatal, type OnFatal } from './fatal.js';
import { startHousekeeping } from './housekeeping.js';
import { startConnectorSupervisor } from '../outbox/supervisor.js';
import { DeliveryDirectory } from './directory.js';
import { createGuardedDispatcher } from './guard/agent.js';
import { makeAllowList } from './guard/address.js';
import { noRetries, type RetryLadder } from './ladder.js';
import { AttemptPipeline } from './pipeline.js';
import { startFailurePath } from './retry-consumer.js';
import { KafkaRetryLadder } from './retry-ladder.js';
import { startProjector } from './projector.js';
import { OutcomeRecorder } from './recorder.js';

export interface Worker {
  name: string;
  stop(): Promise<void>;
}

export const dispatcherGroup = (ctx: Pick<AppContext, 'cfg'>) => `${ctx.cfg.TOPIC_PREFIX}.dispatcher`;

/** Everything an attempt needs, shared by the main dispatcher and (issue 5) the retry consumers. */
export function createPipeline(ctx: AppContext, ladder: RetryLadder = noRetries) {
  // Keep-alive pooled connections per origin; the limit on attempts in flight is the dispatcher's.
  const http = createGuardedDispatcher({ allow: makeAllowList(ctx.cfg.OUTBOUND_ALLOW_CIDRS), keepAliveTimeout: 4_000 });
  const recorder = new OutcomeRecorder(ctx);
  const pipeline = new AttemptPipeline({ ctx, directory: new DeliveryDirectory(ctx), http, recorder, ladder });
  return {
    pipeline,
    async close() {
      await recorder.close();
      // close() waits for requests in flight, and an attempt the drain cut off may hang for its
      // whole timeout_ms: such an attempt is abandoned (its record stays uncommitted and is
      // attempted again by the next owner), as it would be if the process had died.
      await Promise.race([http.close(), new Promise((r) => setTimeout(r, 1_000).unref())]);
    },
  };
}

/** `onFatal`: a consumer crashed for good (fatal.ts); main.ts exits on it. */
export async function startWorkers(ctx: AppContext, roles: string[], onFatal: OnFatal = logFatal(ctx)): Promise<Worker[]> {
  const workers: Worker[] = [];
  if (roles.includes('dispatcher')) {
    const { pipeline, close } = createPipeline(ctx, new KafkaRetryLadder(ctx));
    const failurePath = await startFailurePath(ctx, pipeline, onFatal);
    const consumer = await startDispatchConsumer({
      ctx,
      name: 'dispatcher',
      groupId: dispatcherGroup(ctx),
      topics: [ctx.topics.outbox],
      pipeline,
      concurrency: ctx.cfg.DISPATCH_CONCURRENCY,
      commitIntervalMs: ctx.cfg.DISPATCH_COMMIT_INTERVAL,
      onFatal,
    });
    const housekeeping = startHousekeeping(ctx);
    // one process of those with this role restarts failed connectors (advisory lock; supervisor.ts)
    const supervisor = startConnectorSupervisor(ctx);
    workers.push({
      name: 'dispatcher',
      async stop() {
        await Promise.all([consumer, ...failurePath, housekeeping, supervisor].map((w) => w.stop()));
        await close();
      },
    });
  }
  if (roles.includes('projector')) workers.push(await startProjector(ctx, onFatal));
  return workers;
}
