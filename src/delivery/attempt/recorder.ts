// Records outcomes: publishes delivery events, then writes the ledger rows, in batches. Callers
// await their own record; whatever arrives while flushes are running goes into the next flush
// ("group commit"), so under load one produce request and one INSERT carry hundreds of outcomes.
// When idle, a flush starts LINGER_MS after the first record instead of at once: recording comes
// after the request was sent, so this delays the offset commit and the listing, never a delivery,
// and at moderate rates it turns one produce request and one INSERT per outcome into one per few.
// The attempt keeps its dispatcher slot until recorded: with DISPATCH_CONCURRENCY below BACKLOG a
// consumer makes at most about concurrency / LINGER_MS attempts a second (the default 256 is far
// from it), and a crash finds up to LINGER_MS more of attempts made but not recorded, made again. Up to MAX_FLUSHES flushes run at once
// on a producer of its own (not idempotent, pipelined): a produce round trip under load, not CPU,
// is what bounds throughput, and the projection neither needs events in order across deliveries
// nor minds a duplicate from a producer retry.
//
// Order matters: event first (the outcome is recorded on the log), then the ledger row, then —
// back in the dispatcher — the offset commit. A crash between any two steps replays, never loses:
// a duplicate event is absorbed by the idempotent projection, a missing ledger row means the
// attempt may be made again (at least once).
import type { Producer } from 'kafkajs';
import { JavaCompatiblePartitioner } from '../../kafka/index.js';
import type { AppContext } from '../../context.js';
import type { Logger } from '../../lib/logger.js';
import type { OutboxMessage } from '../message.js';
import { recordLedger, type LedgerRow } from '../ledger.js';


export interface EncodedEvent {
  key: string;
  value: Buffer;
  headers: Record<string, string>;
}

interface Pending {
  events: EncodedEvent[];
  ledger?: LedgerRow;
  bytes: number;
  resolve(): void;
  reject(e: Error): void;
}

const MAX_BATCH_BYTES = 4 * 1024 * 1024;
const MAX_BATCH_ITEMS = 2000;
const MAX_FLUSHES = 4;
const BACKLOG = 64;
const LINGER_MS = 20;

export class OutcomeRecorder {
  readonly #queue: Pending[] = [];
  readonly #flushing = new Set<Promise<void>>();
  #closed = false;
  readonly #log: Logger;
  readonly #producer: Producer;
  #connected: Promise<void> | null = null;
  #linger: NodeJS.Timeout | null = null;

  constructor(private readonly ctx: Pick<AppContext, 'kafka' | 'db' | 'topics' | 'log'>) {
    this.#log = ctx.log.child({ component: 'recorder' });
    this.#producer = ctx.kafka.producer({ allowAutoTopicCreation: false, createPartitioner: JavaCompatiblePartitioner });
  }

  /** Publishes events (and writes the ledger row, if given) and resolves once both are durable. */
  record(events: EncodedEvent[], ledger?: LedgerRow): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('recorder closed'));
    return new Promise((resolve, reject) => {
      const bytes = events.reduce((n, e) => n + e.value.length + 200, 0);
      this.#queue.push({ events, ledger, bytes, resolve, reject });
      this.#kick();
    });
  }

  /** Flushes what is queued, then refuses new records and disconnects. */
  async close(): Promise<void> {
    // what lingers is flushed now, and what queues behind a running flush right after it
    while (this.#flushing.size > 0 || this.#queue.length > 0) {
      this.#kick(true);
      await Promise.all(this.#flushing);
    }
    if (this.#linger) clearTimeout(this.#linger);
    this.#closed = true;
    if (this.#connected) await this.#producer.disconnect().catch(() => {});
  }

  #kick(now = false) {
    // One flush at a time batches best; more run only when a backlog builds up behind it.
    if (this.#flushing.size >= MAX_FLUSHES || this.#queue.length === 0) return;
    if (this.#flushing.size > 0 && this.#queue.length < BACKLOG) return;
    if (this.#flushing.size === 0 && this.#queue.length < BACKLOG && !now) {
      this.#linger ??= setTimeout(() => {
        this.#linger = null;
        this.#kick(true);
      }, LINGER_MS);
      return;
    }
    if (this.#linger) clearTimeout(this.#linger);
    this.#linger = null;
    const p: Promise<void> = this.#flushOnce().finally(() => {
      this.#flushing.delete(p);
      this.#kick();
    });
    this.#flushing.add(p);
  }

  async #flushOnce() {
    const batch: Pending[] = [];
    let bytes = 0;
    while (this.#queue.length > 0 && batch.length < MAX_BATCH_ITEMS && (batch.length === 0 || bytes + this.#queue[0].bytes <= MAX_BATCH_BYTES)) {
      const p = this.#queue.shift()!;
      bytes += p.bytes;
      batch.push(p);
    }
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#write(batch);
        for (const p of batch) p.resolve();
        return;
      } catch (err) {
        // Kafka or the control DB is unavailable: keep trying while running; the messages stay
        // uncommitted meanwhile, so giving up (on close) only means they are attempted again later.
        if (this.#closed || attempt >= 30) {
          for (const p of batch) p.reject(err as Error);
          return;
        }
        this.#log.warn({ err, attempt }, 'recording outcomes failed; retrying');
        await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** attempt)));
      }
    }
  }

  async #write(batch: Pending[]) {
    const messages = batch.flatMap((p) => p.events);
    if (messages.length > 0) {
      this.#connected ??= this.#producer.connect().catch((err) => {
        this.#connected = null;
        throw err;
      });
      await this.#connected;
      await this.#producer.send({ topic: this.ctx.topics.events, messages, acks: -1 });
    }
    await recordLedger(this.ctx.db, batch.map((p) => p.ledger));
  }
}
