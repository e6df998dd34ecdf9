// The dispatch consumer: a kafkajs consumer group that makes delivery attempts (the dispatcher role
// runs one on the outbox topic, and one that pauses until due on the retry topics: retry-consumer.ts).
//
// eachBatch starts an attempt per record (bounded by DISPATCH_CONCURRENCY per consumer) and returns
// without waiting for them, so the next batch is fetched while slow targets are still answering.
// Offsets are resolved for fetching only; commits are ours (autoCommit off): every
// DISPATCH_COMMIT_INTERVAL each partition commits up to its oldest unfinished record, and a record
// is finished only once its outcome is recorded (event + ledger). A consumer killed at any moment
// therefore loses nothing: everything after its last commit is fetched again, and records whose
// outcome is already in the ledger are skipped instead of sent again.
//
// The same consumer runs the retry topics (retry-consumer.ts) with `untilDue`, which pauses a partition
// until its head record is due.
//
// Ordered messages (ordering/keys.ts) of one key run one after the other: a lane per key chains each
// attempt on the previous one of its key. A lane holds one slot of DISPATCH_CONCURRENCY for as long
// as it has messages (handed from one to the next), so a burst of changes to one row waits in
// memory (bounded by INFLIGHT_BYTES) without taking the slots every other key needs. Lanes outlive
// a rebalance of this process: a record fetched again while the previous one of its key is still
// running here waits for it.
import DataLoader from 'dataloader';
import { groupTimeouts, subscribeAll } from '../../kafka/index.js';
import type { Consumer, EachBatchPayload } from 'kafkajs';
import type { AppContext } from '../../context.js';
import { logFatal, reportCrashes, type OnFatal } from '../worker.js';
import { attemptKey, decodeMessage, MalformedMessageError, type OutboxMessage } from '../message.js';
import { Limiter, LimiterSlot, PartitionTracker, RecentKeys } from './offsets.js';
import type { AttemptPipeline } from '../attempt/pipeline.js';
import { alreadyRecorded, isDone } from '../ledger.js';
import { isFresh, isOrdered, laneOf, type FetchCheck, type Head, type OrderedMessage } from '../ordering/keys.js';
import { PartitionLeases } from './leases.js';
import { DispatcherStoppingError } from '../endpoints/window.js';
import type { Worker } from '../worker.js';

const INFLIGHT_BYTES = 16 * 1024 * 1024;

export interface DispatchConsumerOptions {
  ctx: AppContext;
  name: string;
  groupId: string;
  topics: string[];
  pipeline: AttemptPipeline;
  concurrency: number;
  commitIntervalMs: number;
  /** how long stop() waits for in-flight attempts before committing and leaving anyway */
  drainTimeoutMs?: number;
  /**
   * Retry topics: true when `msg` is not due yet; its partition is paused until it is
   * (due-pause.ts), and the record, left unresolved, is fetched again on resume.
   */
  untilDue?: (consumer: Consumer, topic: string, partition: number, msg: OutboxMessage) => boolean;
  /** the consumer crashed for good (worker.ts) */
  onFatal?: OnFatal;
  /**
   * The ledger check of a fetch with the heads of its fresh ordered records' keys, in one statement
   * (ordering/keys.ts, OrderingStore.check); absent: the ledger alone, keys are not read ahead.
   */
  check?: (msgs: readonly OutboxMessage[], ordered: readonly OrderedMessage[]) => Promise<FetchCheck>;
}

/** A fetched record, with what starting its attempt needs of the fetch it came in. */
interface Take {
  msg: OutboxMessage;
  /** its offset */
  n: number;
  tracker: PartitionTracker;
  topic: string;
  partition: number;
  heartbeat: () => Promise<void>;
  /** false once the kafkajs consumer run that fetched it has ended */
  isRunning: () => boolean;
  /** when the ledger, and the head of its ordering key, were read for it */
  readAt: number;
  /** its key's head as read with the fetch; undefined: not read, the attempt reads it */
  head?: Head | null;
  /**
   * false once the record is no longer this process's to attempt, which ends its wait for room;
   * absent: while this dispatcher runs and the consumer run that fetched it has not ended (follow()
   * adds: and no rejoin since)
   */
  owned?: () => boolean;
}

export async function startDispatchConsumer(opts: DispatchConsumerOptions): Promise<Worker> {
  const { ctx, pipeline } = opts;
  const log = ctx.log.child({ component: opts.name });
  const consumer: Consumer = ctx.kafka.consumer({
    groupId: opts.groupId,
    allowAutoTopicCreation: false,
    ...groupTimeouts(ctx.cfg),
    maxWaitTimeInMs: 500,
    // a fetched batch waits whole (decoded) until its last record gets a slot: keep it small
    maxBytesPerPartition: 256 * 1024,
  });
  const limiter = new Limiter(opts.concurrency);
  // Bytes of record values in flight: with a capped heap (npm start), 256 large rows at once must
  // wait rather than run the process out of memory; ordinary messages never reach it.
  const bytes = new Limiter(INFLIGHT_BYTES);
  // Both sets below are keyed by attemptKey (message.ts): project, message id, run, attempt. The
  // project is part of it because message ids are chosen in the projects' databases: a record of
  // another project with the same id must neither wait for this one nor pass for it.
  const recent = new RecentKeys();
  // kafkajs hands the partitions of one fetch to concurrent eachBatch calls; at moderate rates each
  // holds a record or two. Their ledger checks, and the heads of their fresh ordered records' keys,
  // are coalesced into one statement per fetch instead of two per partition (DataLoader gathers the
  // calls made in the same tick). `head`: read the key's head too (null: the key flows).
  const checks = new DataLoader<{ msg: OutboxMessage; head: boolean }, { recorded: boolean; head: Head | null }>(
    async (keys) => {
      const msgs = keys.map((k) => k.msg);
      const ordered = keys.flatMap((k) => (k.head ? [k.msg as OrderedMessage] : []));
      const found: FetchCheck = opts.check ? await opts.check(msgs, ordered) : { recorded: await alreadyRecorded(ctx.db, msgs), heads: new Map() };
      return keys.map((k) => ({
        recorded: isDone(found.recorded, k.msg),
        head: k.head ? (found.heads.get(laneOf(k.msg as OrderedMessage)) ?? null) : null,
      }));
    },
    { cache: false, maxBatchSize: 5000 },
  );
  // per ordering key (project and key): the last attempt started here, which the next one waits for
  const lanes = new Map<string, Promise<boolean>>();
  const laneSlots = new Map<string, LimiterSlot>();
  // by flightKey; resolves true once the record is finished (outcome recorded, or held or parked)
  const inflight = new Map<string, Promise<boolean>>();
  // A record put back (released: by the releaser, or as the next of an ordering key) is another
  // record than the one that was held or parked, though its attempt key is the same: had it
  // waited for that one, which ends 'held' or 'parked', it would have counted as finished and its
  // offset been committed with nothing sent. Found by the ordered-delivery stress test (a key whose
  // next message was released while its parked copy was still publishing its pending state).
  const flightKey = (m: OutboxMessage) => `${attemptKey(m)}|${m.released ?? ''}`;
  // The ledger read again for records whose partition's lease was taken after their fetch's read
  // (the previous holder may have recorded them meanwhile): one query per tick like the first
  // read, retried until it answers (an error would leave the record unfinished until a restart).
  const recheck = new DataLoader<OutboxMessage, boolean>(
    async (msgs) => {
      for (let i = 0; ; i++) {
        try {
          const recorded = await alreadyRecorded(ctx.db, msgs);
          return msgs.map((m) => isDone(recorded, m));
        } catch (err) {
          if (stopping) throw err;
          if (i % 20 === 0) log.warn({ err }, 'reading the ledger failed; retrying');
          await sleep(Math.min(5000, 100 * 2 ** Math.min(i, 6)));
        }
      }
    },
    { cache: false, maxBatchSize: 5000 },
  );
  let trackers = new Map<string, PartitionTracker>();
  let stopping = false;

  // A (re)join restarts fetching from the committed offsets: trackers start afresh, and records
  // fetched again while their first copy is still in flight attach to it instead of a second send.
  // ordered messages are attempted only by the holder of their partition's lease (leases.ts)
  const leases = new PartitionLeases(ctx, opts.groupId);
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    trackers = new Map();
    leases.onJoin(event.payload.memberAssignment);
  });

  const trackerFor = (topic: string, partition: number) => {
    const k = `${topic}:${partition}`;
    let t = trackers.get(k);
    if (!t) trackers.set(k, (t = new PartitionTracker()));
    return t;
  };

  async function commit(): Promise<void> {
    const pending: { topic: string; partition: number; offset: number; tracker: PartitionTracker }[] = [];
    for (const [k, tracker] of trackers) {
      const offset = tracker.committable();
      if (offset === null) continue;
      const i = k.lastIndexOf(':');
      pending.push({ topic: k.slice(0, i), partition: Number(k.slice(i + 1)), offset, tracker });
    }
    if (pending.length === 0) return;
    try {
      await consumer.commitOffsets(pending.map((p) => ({ topic: p.topic, partition: p.partition, offset: String(p.offset) })));
      for (const p of pending) p.tracker.markCommitted(p.offset);
    } catch (err) {
      // Typically a rebalance in progress: the next tick (or the next owner) commits.
      log.debug({ err }, 'offset commit failed');
    }
  }

  /**
   * A record of this partition ended unfinished while the partition is still this consumer run's:
   * its lease was lost for a while (a stall, the control database away) with the partition still
   * assigned here, or its outcome could not be recorded. No rejoin is coming to fetch it again, and
   * it holds the partition's commit point, so the partition is read again from its oldest unfinished
   * record, in offset order, as a rejoin would: what is finished is skipped (the ledger), what is in
   * flight is waited for (follow), and the record takes its place in its key's lane again. A seek
   * without auto-commit moves only where kafkajs fetches next (offsetManager.seek); every seek is to
   * the oldest unfinished offset, so a later one never skips an earlier record. Found by the crash
   * test: two ordered retries cut off by a lease lost beside a broker restart, their partition kept,
   * waited for a rejoin that never came.
   */
  function reread(topic: string, partition: number, tracker: PartitionTracker, msg: OutboxMessage): void {
    if (stopping || trackers.get(`${topic}:${partition}`) !== tracker || !leases.owns(topic, partition)) return;
    const from = tracker.oldestUnfinished();
    if (from === null) return;
    log.info({ topic, partition, offset: from, message: msg.id, project: msg.project }, 'a record ended unfinished while its partition stays here; reading the partition again from its oldest unfinished record');
    try {
      consumer.seek({ topic, partition, offset: String(from) });
    } catch (err) {
      // between kafkajs restarts: the rejoin that follows fetches from the committed offset anyway
      log.warn({ err, topic, partition }, 'could not read the partition again; the next rejoin does');
    }
  }

  /**
   * Starts the attempt of a fetched record, on a slot of its own or, behind an earlier message of
   * its ordering key here, on that key's lane. false: this dispatcher stops, or the consumer run
   * that fetched it ended, before there was room; the record stays unfinished and is fetched again.
   */
  async function launch(t: Take): Promise<boolean> {
    const { msg, n, tracker, topic, partition, heartbeat, isRunning, readAt } = t;
    const key = attemptKey(msg);
    const flying = flightKey(msg);
    const weight = msg.rawValue.length;
    // checked last before room is taken, and nothing is awaited between that and inflight.set below:
    // a copy fetched by a later generation either finds this attempt in flight or this wait ends
    const owned = t.owned ?? (() => !stopping && isRunning());
    const cancelled = () => !owned();
    if (!(await bytes.acquire(heartbeat, cancelled, weight))) return false;
    // an ordered message behind another of its key in this process waits for it, on its slot
    const lane = msg.orderingKey !== undefined ? laneOf({ project: msg.project, orderingKey: msg.orderingKey }) : null;
    const before = lane ? lanes.get(lane) : undefined;
    if (!before) {
      // a heartbeat that throws while it waits (a rebalance) must not keep the bytes taken above
      let got = false;
      try {
        got = await limiter.acquire(heartbeat, cancelled);
      } finally {
        if (!got) bytes.release(weight);
      }
      if (!got) return false;
    }
    const hint = { head: t.head ?? null, chained: before !== undefined || t.head === undefined };
    // The slot is given back while the attempt waits for its endpoint's window (endpoints/window.ts);
    // a lane's messages share the slot of its first. It is not taken again once this dispatcher
    // stops: the attempt is cut off before its request, and the next owner makes it.
    // - An unordered record is cut off too once the consumer run that fetched it ends (a kafkajs
    //   restart, a rebalance): nothing else keeps another process from sending it meanwhile. A copy
    //   fetched after the rejoin makes the attempt (follow).
    // - An ordered one goes on across a kafkajs restart that leaves its partition here: its copy
    //   fetched after the rejoin could not take its place in the key's lane, and cut off, it would
    //   leave its key's next message free to overtake it. It is cut off once the partition is
    //   assigned elsewhere or its lease is lost: the lease is kept while ordered attempts are in
    //   flight (leases.ts), and one that waits here for a slot must not keep the partition's new
    //   owner waiting for it, whose own slots may be what this one waits for (two dispatchers
    //   each full of the other's partitions: found by the crash test).
    const cutOff = lane ? () => stopping || !leases.owns(topic, partition) || !leases.holds(topic, partition) : () => stopping || !isRunning();
    const slot = (lane && before && laneSlots.get(lane)) || new LimiterSlot(limiter, () => heartbeat().catch(() => {}), cutOff);
    if (lane) laneSlots.set(lane, slot);
    const self: { p?: Promise<boolean> } = {};
    const p = (before ?? Promise.resolve(true))
      .then(async (previous) => {
        if (!lane) return pipeline.process(msg, hint, slot);
        // The previous message of the key was cut off by the stop before its request: the next
        // owner of the partition fetches it again and sends it. This one must not go ahead of
        // it, so it is left for the next owner too. (In a running dispatcher a previous message
        // that did not finish, its outcome not recorded, is not waited for: nothing would fetch
        // this one again until a rejoin, and a later message of the key would overtake it.)
        if (!previous && stopping) return 'lost' as const;
        const lease = await leases.ensure(topic, partition);
        // lost to another process meanwhile: it fetches this record from the committed offset
        if (lease === 'lost') return 'lost' as const;
        // Taken over since this record's fetch read the ledger and the key's head (by this call or
        // by another record of the partition that waited with it): the previous holder may have
        // recorded it, or blocked its key, meanwhile. Every record that waited reads again, not
        // only the one whose call took the lease (the crash test's duplicates at a hand-off).
        const stale = lease === 'acquired' || leases.heldSince(topic, partition) >= readAt;
        // (done with: not added to `recent`, which stands for every copy of the attempt; this may be
        // a hold, whose copy put back by the releaser is still to be sent)
        if (stale && (await recheck.load(msg))) return 'done' as const;
        leases.begin(topic, partition);
        try {
          return await pipeline.process(msg, stale ? { ...hint, chained: true } : hint, slot);
        } finally {
          leases.end(topic, partition);
        }
      })
      .then((result) => {
        if (result === 'lost') return false;
        // a held record comes back with the same attempt key (endpoints/releaser.ts): not a duplicate
        if (result === 'recorded') recent.add(key);
        tracker.finish(n);
        return true;
      })
      .catch((err) => {
        // after stop() gave up draining, the recorder is closed: expected, and said once above
        if (stopping) log.info({ message: msg.id }, 'attempt cut off by the stop; its record stays uncommitted and is attempted again by the next owner');
        else if (err instanceof DispatcherStoppingError) log.info({ message: msg.id, project: msg.project }, lane ? "attempt cut off before its request: its partition went to another dispatcher, or its lease was lost; the partition's owner attempts it" : 'attempt cut off before its request: the consumer run that fetched it ended; a copy fetched after the rejoin attempts it');
        else log.error({ err, message: msg.id }, 'recording an outcome failed; the record stays uncommitted and is attempted again');
        return false;
      })
      .then((ok) => {
        // not lost to a stop, a rejoin or another owner, and not finished: nothing else fetches it again
        if (!ok && isRunning()) setImmediate(() => reread(topic, partition, tracker, msg));
        return ok;
      })
      .finally(() => {
        inflight.delete(flying);
        bytes.release(weight);
        // the lane's slot goes to the next message of the key, if one chained on this one
        if (lane && lanes.get(lane) !== self.p) return;
        if (lane) {
          lanes.delete(lane);
          laneSlots.delete(lane);
        }
        slot.done();
      });
    self.p = p;
    if (lane) lanes.set(lane, p);
    inflight.set(flying, p);
    return true;
  }

  /**
   * A copy of a record fetched again while its first copy is still in flight here (a rejoin
   * restarts fetching from the committed offset) waits for that one instead of sending twice. That
   * one may end unfinished: cut off before its request because its consumer run ended (it gave its
   * slot back while it waited for its endpoint's window, and cannot take one again once kafkajs
   * restarts the consumer), its partition's lease lost, its outcome not recorded. The copy is then
   * the record's live copy, and nothing would fetch it again before the next rejoin, which may never
   * come: so it reads the ledger again and makes the attempt itself. Unless this dispatcher stops or
   * the copy's own run has ended too: the next rejoin fetches the record again.
   *
   * Unordered records only. An ordered record's first copy is not cut off by the end of its run
   * (launch: it goes on under its partition's lease), so its copies finish with it. It can still end
   * unfinished, its lease lost (a process stalled past the lease's TTL) or its outcome not recorded;
   * its copy would then have to take its place in its key's lane in offset order, which a launch
   * from here (outside the fetch's loop, after awaits) does not promise, so the partition is read
   * again from its oldest unfinished record instead (reread).
   */
  function follow(running: Promise<boolean>, t: Take): void {
    const current = () => !stopping && t.isRunning() && trackers.get(`${t.topic}:${t.partition}`) === t.tracker;
    void running
      .then(async (ok) => {
        if (ok) return t.tracker.finish(t.n);
        if (!current()) return;
        // an ordered copy must take its place in its key's lane in offset order: read the partition again
        if (t.msg.orderingKey !== undefined) return reread(t.topic, t.partition, t.tracker, t.msg);
        const again = inflight.get(flightKey(t.msg));
        if (again) return follow(again, t);
        const readAt = Date.now();
        if (await recheck.load(t.msg)) return t.tracker.finish(t.n);
        const another = inflight.get(flightKey(t.msg));
        if (another) return follow(another, t);
        if (!current()) return;
        log.info({ message: t.msg.id, project: t.msg.project, run: t.msg.run, attempt: t.msg.attempt }, 'the attempt this record waited for was cut off; attempting it again here');
        // outside a batch a failed heartbeat is kafkajs's to handle: the wait goes on
        await launch({ ...t, heartbeat: () => t.heartbeat().catch(() => {}), readAt, head: undefined, owned: current });
      })
      .catch((err) => log.warn({ err, message: t.msg.id }, 'a record whose first copy was cut off stays unfinished until the next rejoin'));
  }

  async function eachBatch({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const tracker = trackerFor(batch.topic, batch.partition);
    const records = batch.messages.map((m) => {
      try {
        return { offset: m.offset, msg: decodeMessage(m) as OutboxMessage | null };
      } catch (err) {
        if (!(err instanceof MalformedMessageError)) throw err;
        log.error({ topic: batch.topic, partition: batch.partition, offset: m.offset, reason: err.message }, 'skipping a malformed outbox record');
        return { offset: m.offset, msg: null };
      }
    });
    const candidates = records.flatMap((r) => (r.msg && !recent.has(attemptKey(r.msg)) && !inflight.has(flightKey(r.msg)) ? [r.msg] : []));
    // what is read here is as of now: an ordered record whose partition lease is taken later reads again
    const readAt = Date.now();
    // the heads are read for the fresh ordered records only (hint.chained below: the others read their own)
    const asked = candidates.map((msg) => ({ msg, head: opts.check !== undefined && isOrdered(msg) && isFresh(msg) }));
    const checked = await checks.loadMany(asked);
    const headOf = new Map<OutboxMessage, Head | null>();
    // by record, not by attempt key: a hold makes its own record done, not the releaser's copy of it
    const recorded = new Set<OutboxMessage>();
    checked.forEach((r, i) => {
      if (r instanceof Error) throw r; // control DB unavailable: kafkajs retries the batch
      const { msg, head } = asked[i];
      if (r.recorded) recorded.add(msg);
      if (head) headOf.set(msg, r.head);
    });

    for (const { offset, msg } of records) {
      if (stopping || !isRunning() || isStale()) break;
      if (msg && opts.untilDue?.(consumer, batch.topic, batch.partition, msg)) break;
      const n = Number(offset);
      const key = msg ? attemptKey(msg) : '';
      tracker.begin(n);
      if (!msg || recorded.has(msg) || recent.has(key)) {
        if (msg) log.debug({ message: msg.id, project: msg.project, run: msg.run, attempt: msg.attempt }, 'outcome already recorded; not sending again');
        tracker.finish(n);
        resolveOffset(offset);
        continue;
      }
      // a copy of a record still in flight here (fetched again after a rejoin) waits for it; a copy
      // put back by the releaser or by an ordering key's advance is not a copy: the record in flight
      // may end 'held' or 'parked', and this one is what came back for it (flightKey)
      const take: Take = { msg, n, tracker, topic: batch.topic, partition: batch.partition, heartbeat, isRunning, readAt, head: headOf.has(msg) ? headOf.get(msg) : undefined };
      const running = inflight.get(flightKey(msg));
      if (running) follow(running, take);
      // Began but not finished: if we stop here, this record holds the commit point and is fetched again.
      else if (!(await launch(take))) break;
      resolveOffset(offset);
    }
    await heartbeat().catch(() => {});
  }

  reportCrashes(consumer, opts.name, opts.onFatal ?? logFatal(ctx));
  await consumer.connect();
  await subscribeAll(consumer, opts.topics);
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: Math.max(1, ctx.cfg.OUTBOX_PARTITIONS),
    eachBatch,
  });
  const timer = setInterval(() => void commit(), opts.commitIntervalMs);
  log.info({ group: opts.groupId, topics: opts.topics, concurrency: opts.concurrency }, 'dispatcher started');

  return {
    name: opts.name,
    async stop() {
      if (stopping) return;
      stopping = true;
      try {
        consumer.pause(opts.topics.map((topic) => ({ topic })));
      } catch {
        // crashed (between restarts, or for good): nothing is being fetched to pause
      }
      const drained = await Promise.race([limiter.idle().then(() => true), sleep(opts.drainTimeoutMs ?? ctx.cfg.SHUTDOWN_DRAIN_TIMEOUT).then(() => false)]);
      if (!drained) log.warn({ inflight: limiter.active }, 'stopping with attempts still in flight; they will be made again by the next owner');
      clearInterval(timer);
      await leases.stop();
      await commit();
      await consumer.disconnect();
      log.info('dispatcher stopped');
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref?.());
