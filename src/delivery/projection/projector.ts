// The projector: a consumer group on the delivery-events topic that keeps the deliveries tables up
// to date, and the rebuild that replays the whole topic into them (npm run admin --
// rebuild-deliveries). Batches are applied in one transaction each; offsets are committed after
// the transaction, so a crash replays a batch into the idempotent projection (fold.ts).
import DataLoader from 'dataloader';
import { groupTimeouts, PeriodicCommitter, subscribeAll } from '../../kafka/index.js';
import type { AppContext } from '../../context.js';
import { withTransaction } from '../../db/index.js';
import { decodeEvent, type DeliveryEvent } from '../events.js';
import { logFatal, reportCrashes, type OnFatal } from '../worker.js';
import { applyEvents } from './fold.js';
import type { Worker } from '../worker.js';

/** Applied events' offsets are committed this often (a replay after a crash is idempotent). */
const COMMIT_INTERVAL_MS = 1000;


function decodeAll(ctx: Pick<AppContext, 'log'>, messages: { headers?: import('kafkajs').IHeaders; value: Buffer | null; offset: string }[]): DeliveryEvent[] {
  const out: DeliveryEvent[] = [];
  for (const m of messages) {
    try {
      const ev = decodeEvent(m.headers, m.value);
      if (ev) out.push(ev);
    } catch (err) {
      ctx.log.error({ err, offset: m.offset }, 'skipping an undecodable delivery event');
    }
  }
  return out;
}

/** SQLSTATE class 22, data exception: the same statement with the same values fails again. */
const isDataException = (err: unknown) => /^22/.test(String((err as { code?: unknown })?.code ?? ''));

/**
 * Applies events to the projection, the projector's batches and the rebuild's alike. One event the
 * database refuses for its data (class 22: a value its column cannot hold) would otherwise fail
 * every try of the transaction and hold the projection of every project (found with a forged
 * webhook id that is no uuid, 2026-11-27). The events are then applied again one at a time (the
 * projection is idempotent) and the refused ones skipped, said loudly: the ledger and the events
 * topic keep the outcome, and a rebuild replays it once a fix can read it.
 */
async function applyOrSkip(ctx: Pick<AppContext, 'db'>, log: AppContext['log'], events: DeliveryEvent[]): Promise<void> {
  try {
    await applyEvents(ctx.db, events);
  } catch (err) {
    if (!isDataException(err)) throw err; // the database away: the caller's batch is tried again
    for (const ev of events) {
      try {
        await applyEvents(ctx.db, [ev]);
      } catch (one) {
        if (!isDataException(one)) throw one;
        log.error({ err: one, type: ev.type, message: ev.data.message_id, project: ev.data.project }, 'skipping a delivery event the projection refuses');
      }
    }
  }
}

export async function startProjector(ctx: AppContext, onFatal: OnFatal = logFatal(ctx)): Promise<Worker> {
  const log = ctx.log.child({ component: 'projector' });
  // Waits up to 200 ms for 64 KB (~200 events) rather than answering every fetch with the few
  // events that have arrived: at moderate rates that is one transaction per partition per fetch
  // carrying many upserts instead of a few, at most 200 ms later in the listing.
  const consumer = ctx.kafka.consumer({ groupId: ctx.groups.projector, allowAutoTopicCreation: false, maxWaitTimeInMs: 200, minBytes: 64 * 1024, ...groupTimeouts(ctx.cfg) });
  reportCrashes(consumer, 'projector', onFatal);
  await consumer.connect();
  await subscribeAll(consumer, [ctx.topics.events]);
  // The partitions of one fetch arrive as concurrent eachBatch calls; their events are applied in
  // one transaction (DataLoader gathers the calls of the same tick), and each call resolves, letting
  // kafkajs commit its offsets, only once that transaction has committed.
  const apply = new DataLoader<DeliveryEvent[], null>(
    async (groups) => {
      await applyOrSkip(ctx, log, groups.flat());
      return groups.map(() => null);
    },
    { cache: false },
  );
  const commits = new PeriodicCommitter(consumer, COMMIT_INTERVAL_MS, (err) => log.debug({ err }, 'offset commit failed'));
  await consumer.run({
    autoCommit: false,
    partitionsConsumedConcurrently: Math.max(1, ctx.cfg.OUTBOX_PARTITIONS),
    eachBatch: async ({ batch, heartbeat }) => {
      await apply.load(decodeAll(ctx, batch.messages));
      if (batch.messages.length > 0) commits.done(batch.topic, batch.partition, batch.lastOffset());
      await heartbeat();
    },
  });
  commits.start();
  log.info({ group: ctx.groups.projector, topic: ctx.topics.events }, 'projector started');
  return {
    name: 'projector',
    async stop() {
      // commits what is applied while the consumer still runs (kafkajs drops commits after stop);
      // a batch applied after this is applied again by the next owner, idempotently
      await commits.stop();
      await consumer.disconnect();
    },
  };
}

/**
 * Rebuilds the projection from the events topic: deletes the rows (of one project, or all) and
 * replays every event up to the topic's end as it was when the rebuild started. The live projector
 * may keep running meanwhile; both write idempotently, so they converge. Between the delete and
 * the end of the replay the listing is incomplete.
 */
export async function rebuildDeliveries(ctx: AppContext, opts: { project?: string; progress?: (done: number, total: number) => void } = {}): Promise<{ events: number; deliveries: number }> {
  const admin = ctx.kafka.admin();
  await admin.connect();
  const groupId = `${ctx.cfg.TOPIC_PREFIX}.rebuild.${Date.now().toString(36)}`;
  try {
    const offsets = await admin.fetchTopicOffsets(ctx.topics.events);
    const end = new Map(offsets.map((o) => [o.partition, Number(o.high)]));
    const start = new Map(offsets.map((o) => [o.partition, Number(o.low)]));
    const total = offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);

    const where = opts.project ? 'where project_ref = $1' : '';
    const params = opts.project ? [opts.project] : [];
    // The live projector writes both tables in one statement, counting new attempts into
    // deliveries.total_attempts: it is kept out while both deletes run, or an attempt counted
    // between them would survive the first delete and lose its count in the replay.
    await withTransaction(ctx.db, async (c) => {
      await c.query('lock table deliveries in share row exclusive mode');
      await c.query(`delete from delivery_attempts ${where}`, params);
      await c.query(`delete from deliveries ${where}`, params);
    });

    let seen = 0;
    let applied = 0;
    const reached = new Map<number, number>();
    const done = () => [...end].every(([p, high]) => high <= (start.get(p) ?? 0) || (reached.get(p) ?? -1) >= high - 1);
    if (!done()) {
      const consumer = ctx.kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 200 });
      await consumer.connect();
      await consumer.subscribe({ topic: ctx.topics.events, fromBeginning: true });
      let finish!: () => void;
      const finished = new Promise<void>((r) => (finish = r));
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch, heartbeat }) => {
          const high = end.get(batch.partition) ?? 0;
          const msgs = batch.messages.filter((m) => Number(m.offset) < high);
          let events = decodeAll(ctx, msgs);
          if (opts.project) events = events.filter((e) => e.data.project === opts.project);
          await applyOrSkip(ctx, ctx.log, events);
          applied += events.length;
          seen += msgs.length;
          const last = msgs.at(-1);
          if (last) reached.set(batch.partition, Number(last.offset));
          opts.progress?.(seen, total);
          await heartbeat();
          if (done()) finish();
        },
      });
      await finished;
      await consumer.disconnect();
      await admin.deleteGroups([groupId]).catch(() => {});
    }
    const n = await ctx.db.query(`select count(*)::int as n from deliveries ${where}`, params);
    return { events: applied, deliveries: n.rows[0].n };
  } finally {
    await admin.disconnect();
  }
}
