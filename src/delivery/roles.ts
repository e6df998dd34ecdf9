// The background roles of this process (dispatcher, projector), started per ROLES. The dispatcher
// role runs the main outbox consumer and the retry consumer (consume/), the callbacks worker
// (callbacks/), housekeeping of the ledger (housekeeping.ts), the connector supervisor
// (src/outbox/supervisor.ts) and webhook backfills (src/outbox/backfill.ts); the projector role keeps the deliveries tables (projection/).
import type { AppContext } from '../context.js';
import { createGuardedAgent, makeAllowList } from '../outbound/index.js';
import { startBackfills, startConnectorSupervisor } from '../outbox/index.js';
import { OutcomeRecorder } from './attempt/recorder.js';
import { AttemptPipeline } from './attempt/pipeline.js';
import { startCallbacks } from './callbacks/consumer.js';
import { DeliveryDirectory } from './channels/send-config.js';
import { startDispatchConsumer } from './consume/dispatch-consumer.js';
import { startRetryConsumer } from './consume/retry-consumer.js';
import { startHousekeeping } from './housekeeping.js';
import { startProjector } from './projection/projector.js';
import { KafkaRetryLadder, type RetryLadder } from './retry/ladder.js';
import { logFatal, type OnFatal, type Worker } from './worker.js';
import { EndpointHealth } from './endpoints/health.js';
import { EndpointGate } from './endpoints/gate.js';
import { startReleaser } from './endpoints/releaser.js';
import { OrderingStore, startOrderingSweeper } from './ordering/keys.js';


/** Everything an attempt needs, shared by the main dispatcher and the retry consumer. */
export function createPipeline(ctx: AppContext, ladder: RetryLadder, health?: EndpointHealth) {
  // Keep-alive pooled connections per origin; the limit on attempts in flight is the dispatcher's.
  const http = createGuardedAgent({ allow: makeAllowList(ctx.cfg.OUTBOUND_ALLOW_CIDRS), keepAliveTimeout: 4_000 });
  const recorder = new OutcomeRecorder(ctx);
  const gate = health ? new EndpointGate(ctx, health) : undefined;
  const ordering = new OrderingStore(ctx);
  const pipeline = new AttemptPipeline({ ctx, directory: new DeliveryDirectory(ctx), http, recorder, ladder, gate, ordering });
  return {
    pipeline,
    ordering,
    async close() {
      await recorder.close();
      // close() waits for requests in flight, and an attempt the drain cut off may hang for its
      // whole timeout_ms: such an attempt is abandoned (its record stays uncommitted and is
      // attempted again by the next owner), as it would be if the process had died.
      await Promise.race([http.close(), new Promise((r) => setTimeout(r, 1_000).unref())]);
    },
  };
}

/** `onFatal`: a consumer crashed for good (worker.ts); main.ts exits on it. */
export async function startWorkers(ctx: AppContext, roles: string[], onFatal: OnFatal = logFatal(ctx)): Promise<Worker[]> {
  const workers: Worker[] = [];
  if (roles.includes('dispatcher')) {
    // circuit breaker, rate limits and held messages (endpoints/): shared by both consumers
    const health = new EndpointHealth(ctx);
    health.start();
    const releaser = startReleaser(ctx, health);
    const { pipeline, ordering, close } = createPipeline(ctx, new KafkaRetryLadder(ctx), health);
    const sweeper = startOrderingSweeper(ordering, ctx.log);
    const retries = await startRetryConsumer(ctx, pipeline, onFatal);
    // callbacks react to the final outcomes both consumers record
    const callbacks = await startCallbacks(ctx, onFatal);
    const consumer = await startDispatchConsumer({
      ctx,
      name: 'dispatcher',
      groupId: ctx.groups.dispatcher,
      topics: [ctx.topics.outbox],
      pipeline,
      concurrency: ctx.cfg.DISPATCH_CONCURRENCY,
      commitIntervalMs: ctx.cfg.DISPATCH_COMMIT_INTERVAL,
      onFatal,
      check: (msgs, ordered) => ordering.check(msgs, ordered),
    });
    const housekeeping = startHousekeeping(ctx);
    // one process of those with this role restarts failed connectors (advisory lock; supervisor.ts)
    const supervisor = startConnectorSupervisor(ctx);
    // webhook backfills: the rows already in a table, enqueued chunk by chunk (src/outbox/backfill.ts)
    const backfills = startBackfills(ctx);
    workers.push({
      name: 'dispatcher',
      async stop() {
        await releaser.stop();
        sweeper.stop();
        await Promise.all([consumer, retries, callbacks, housekeeping, supervisor, backfills].map((w) => w.stop()));
        await health.stop();
        await close();
      },
    });
  }
  if (roles.includes('projector')) workers.push(await startProjector(ctx, onFatal));
  return workers;
}
