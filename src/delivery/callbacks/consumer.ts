// Callbacks after the final outcome, off the hot path: a consumer group on the delivery-events
// topic (<prefix>.callbacks) reacts to final DeliveryAttempted events that name a callback_function
// and writes one work row per (project, delivery, run) into delivery_callbacks (insert-if-absent,
// then the offset is committed), so a replayed or duplicated event is not called twice and the work
// survives a crash. A runner in every dispatcher process claims due rows (lease + skip locked, so
// several processes share the work), calls the function as base_callback (call.ts), publishes a
// CallbackInvoked event (projected into deliveries.callback_*) and finishes the row or schedules
// the next call (CALLBACK_RETRY_DELAY doubling, at most CALLBACK_MAX_ATTEMPTS calls). A callback
// never changes the delivery's status, and a slow or failing one only holds its own row.
//
// At least once: a crash after a call's commit and before its row is finished calls it again when
// the lease runs out.
import type { AppContext } from '../../context.js';
import { groupTimeouts, PeriodicCommitter, subscribeAll } from '../../kafka/index.js';
import { callCallback, type CallbackPayload } from './call.js';
import { logFatal, reportCrashes, type OnFatal } from '../worker.js';
import { decodeEvent, encodeEvent, type CallbackInvoked, type DeliveryAttempted } from '../events.js';
import type { Worker } from '../worker.js';


const BATCH = 32;
const POLL_MS = 1000;

export function payloadOf(e: DeliveryAttempted): CallbackPayload {
  const status = e.status === 'delivered' ? 'delivered' : 'dead';
  return { id: e.message_id, status, delivered: status === 'delivered', body: e.response_body, error: e.error, attempts: e.attempt };
}

interface Claimed {
  message_id: string;
  run: number;
  project_ref: string;
  function: string;
  payload: CallbackPayload;
  attempts: number;
}

export class CallbackRunner {
  #running: Promise<void> | null = null;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(private readonly ctx: AppContext) {}

  start(): void {
    this.#timer = setInterval(() => this.kick(), POLL_MS);
  }

  /** Runs a sweep now (or right after the one in progress). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          while (!this.#stopped && (await this.#sweep()) === BATCH);
        } while (this.#again && !this.#stopped);
      } catch (err) {
        this.ctx.log.warn({ err }, 'callback sweep failed; retrying on the next tick');
      } finally {
        this.#running = null;
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#running;
  }

  async #sweep(): Promise<number> {
    const leaseMs = this.ctx.cfg.CALLBACK_TIMEOUT + 30_000;
    const r = await this.ctx.db.query<Claimed>(
      `with due as (
         select project_ref, message_id, run from delivery_callbacks
          where status = 'pending' and next_attempt_at <= now() and (claimed_until is null or claimed_until < now())
          order by next_attempt_at limit ${BATCH} for update skip locked)
       update delivery_callbacks c
          set claimed_until = now() + $1 * interval '1 millisecond', attempts = c.attempts + 1, updated_at = now()
         from due where c.project_ref = due.project_ref and c.message_id = due.message_id and c.run = due.run
       returning c.message_id, c.run, c.project_ref, c.function, c.payload, c.attempts`,
      [leaseMs],
    );
    await Promise.all(r.rows.map((row) => this.#call(row)));
    return r.rows.length;
  }

  async #call(row: Claimed): Promise<void> {
    const { cfg, log } = this.ctx;
    let error: string | null = null;
    try {
      const pool = await this.ctx.projectDbs.callbackPool(row.project_ref);
      await callCallback(pool, row.function, row.payload, cfg.CALLBACK_TIMEOUT);
    } catch (err) {
      error = (err as Error).message;
    }
    const last = row.attempts >= cfg.CALLBACK_MAX_ATTEMPTS;
    const status: CallbackInvoked['status'] = error === null ? 'ok' : last ? 'failed' : 'retrying';
    if (error) log.info({ message: row.message_id, project: row.project_ref, callback: row.function, attempts: row.attempts, error }, 'callback failed');
    const event: CallbackInvoked = {
      message_id: row.message_id,
      project: row.project_ref,
      run: row.run,
      callback_function: row.function,
      status,
      error,
      attempts: row.attempts,
      called_at: Date.now(),
    };
    await this.ctx.producer.send({ topic: this.ctx.topics.events, acks: -1, messages: [encodeEvent({ type: 'CallbackInvoked', data: event })] });
    const delayMs = Math.round(cfg.CALLBACK_RETRY_DELAY * cfg.RETRY_TIME_SCALE * 2 ** (row.attempts - 1));
    await this.ctx.db.query(
      `update delivery_callbacks
          set status = $3, last_error = $4, claimed_until = null, updated_at = now(),
              next_attempt_at = now() + $5 * interval '1 millisecond'
        where project_ref = $6 and message_id = $1 and run = $2`,
      [row.message_id, row.run, status === 'retrying' ? 'pending' : status, error, delayMs, row.project_ref],
    );
  }
}

/** The consumer that turns final events into callback work, and the runner that does it. */
export async function startCallbacks(ctx: AppContext, onFatal: OnFatal = logFatal(ctx)): Promise<Worker> {
  const log = ctx.log.child({ component: 'callbacks' });
  const runner = new CallbackRunner(ctx);
  const consumer = ctx.kafka.consumer({
    groupId: ctx.groups.callbacks,
    allowAutoTopicCreation: false,
    ...groupTimeouts(ctx.cfg),
    // Callbacks are not latency-critical: wait for 64 KB of events (or 500 ms) per fetch instead
    // of fetching again after every produce of the recorder.
    maxWaitTimeInMs: 500,
    minBytes: 64 * 1024,
  });
  const commits = new PeriodicCommitter(consumer, 1000, (err) => log.debug({ err }, 'offset commit failed'));
  reportCrashes(consumer, 'callbacks', onFatal);
  await consumer.connect();
  await subscribeAll(consumer, [ctx.topics.events]);
  await consumer.run({
    autoCommit: false,
    partitionsConsumedConcurrently: Math.max(1, ctx.cfg.OUTBOX_PARTITIONS),
    eachBatch: async ({ batch, heartbeat }) => {
      const work: DeliveryAttempted[] = [];
      for (const m of batch.messages) {
        if (m.headers?.['event-type']?.toString() !== 'DeliveryAttempted') continue;
        try {
          const ev = decodeEvent(m.headers, m.value);
          // An event older than LEDGER_RETENTION can only be read again when the group's offsets were
          // lost (a group empty for longer than the broker keeps offsets starts from the beginning):
          // its callback row may have been pruned already, and calling again is worse than not.
          if (ev?.type === 'DeliveryAttempted' && ev.data.final && ev.data.callback_function && ev.data.finished_at >= Date.now() - ctx.cfg.LEDGER_RETENTION) work.push(ev.data);
        } catch (err) {
          log.error({ err, offset: m.offset }, 'skipping an undecodable delivery event');
        }
      }
      if (work.length > 0) {
        await ctx.db.query(
          `insert into delivery_callbacks (message_id, run, project_ref, function, payload)
           select * from unnest($1::uuid[], $2::int[], $3::text[], $4::text[], $5::jsonb[])
           on conflict (project_ref, message_id, run) do nothing`,
          [work.map((e) => e.message_id), work.map((e) => e.run), work.map((e) => e.project), work.map((e) => e.callback_function), work.map((e) => JSON.stringify(payloadOf(e)))],
        );
        runner.kick();
      }
      if (batch.messages.length > 0) commits.done(batch.topic, batch.partition, batch.lastOffset());
      await heartbeat();
    },
  });
  commits.start();
  runner.start();
  log.info({ group: ctx.groups.callbacks, topic: ctx.topics.events }, 'callbacks started');
  return {
    name: 'callbacks',
    async stop() {
      // commits what is applied while the consumer still runs (kafkajs drops commits after stop);
      // a batch applied after this is applied again by the next owner, idempotently
      await commits.stop();
      await consumer.disconnect();
      await runner.stop();
    },
  };
}
