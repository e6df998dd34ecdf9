// Bookkeeping that lets attempts finish out of order while offsets are committed in order: the
// commit point of a partition is the oldest offset still in flight (or one past the newest seen),
// so a commit never covers a message whose outcome is not recorded, and a slow message holds back
// only the commit point of its own partition — never the attempts behind it.
export class PartitionTracker {
  readonly #inflight = new Set<number>();
  #high = -1;
  #committed = -1;

  begin(offset: number): void {
    this.#inflight.add(offset);
    if (offset > this.#high) this.#high = offset;
  }

  finish(offset: number): void {
    this.#inflight.delete(offset);
  }

  /** The offset to commit (Kafka's "next to read"), or null when it would not move forward. */
  committable(): number | null {
    if (this.#high < 0) return null;
    let low = this.#high + 1;
    for (const o of this.#inflight) if (o < low) low = o;
    return low > this.#committed ? low : null;
  }

  markCommitted(offset: number): void {
    if (offset > this.#committed) this.#committed = offset;
  }

  get inflight(): number {
    return this.#inflight.size;
  }
}

/**
 * A counting semaphore: at most `max` attempts in flight per consumer. With weights it bounds a
 * sum instead (bytes of messages in flight); one holder is always let in, however heavy.
 */
export class Limiter {
  #active = 0;
  readonly #waiters: (() => void)[] = [];
  readonly #idle: (() => void)[] = [];

  constructor(readonly max: number) {}

  /**
   * Waits for a slot. `whileWaiting` runs about every second (the dispatcher heartbeats there, so
   * a long wait does not cost the group membership); `cancelled` ends the wait without a slot.
   */
  async acquire(whileWaiting: () => Promise<void>, cancelled: () => boolean, weight = 1): Promise<boolean> {
    const full = () => this.#active > 0 && this.#active + weight > this.max;
    while (full()) {
      if (cancelled()) return false;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          const i = this.#waiters.indexOf(wake);
          if (i >= 0) this.#waiters.splice(i, 1);
          resolve();
        }, 1000);
        this.#waiters.push(wake);
      });
      if (full()) await whileWaiting();
    }
    if (cancelled()) return false;
    this.#active += weight;
    return true;
  }

  release(weight = 1): void {
    this.#active -= weight;
    this.#waiters.shift()?.();
    if (this.#active === 0) this.#idle.splice(0).forEach((f) => f());
  }

  /** Resolves when nothing is in flight. */
  idle(): Promise<void> {
    return this.#active === 0 ? Promise.resolve() : new Promise((r) => this.#idle.push(r));
  }

  get active(): number {
    return this.#active;
  }
}

/** Attempt keys recorded by this process, newest kept: closes the gap between a batch's ledger query and its attempts. */
export class RecentKeys {
  readonly #keys = new Set<string>();
  constructor(private readonly max = 200_000) {}
  add(key: string) {
    this.#keys.add(key);
    if (this.#keys.size > this.max) this.#keys.delete(this.#keys.values().next().value!);
  }
  has(key: string) {
    return this.#keys.has(key);
  }
}

/**
 * Subscribes, retrying while the broker's metadata does not know the topic yet (right after it
 * was created, a broker may still answer UNKNOWN_TOPIC_OR_PARTITION for a moment).
 */
export async function subscribeAll(consumer: import('kafkajs').Consumer, topics: string[]): Promise<void> {
  for (const topic of topics) {
    for (let attempt = 0; ; attempt++) {
      try {
        await consumer.subscribe({ topic, fromBeginning: true });
        break;
      } catch (err) {
        const e = err as { type?: string; retriable?: boolean };
        if (attempt >= 20 || !(e.type === 'UNKNOWN_TOPIC_OR_PARTITION' || e.retriable)) throw err;
        await new Promise((r) => setTimeout(r, 250 * Math.min(attempt + 1, 8)));
      }
    }
  }
}

/**
 * Offsets committed on a timer for consumers whose batches finish in order (projector,
 * callbacks). kafkajs's autoCommit sends an OffsetCommit after every partition's batch, whatever
 * autoCommitInterval says: at a few hundred messages a second that was ~200 requests a second
 * from one consumer, more broker work than the messages themselves. Whatever was applied but not
 * yet committed when a consumer dies is applied again by the next owner; both users are idempotent.
 */
export class PeriodicCommitter {
  #done = new Map<string, { topic: string; partition: number; offset: string }>();
  /** the highest offset committed per partition: nothing lower is ever sent again */
  #committed = new Map<string, bigint>();
  #flushing: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly consumer: import('kafkajs').Consumer,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    // after a rebalance our partitions may be someone else's: leave their offsets to the new owner
    consumer.on(consumer.events.GROUP_JOIN, () => {
      this.#done.clear();
      this.#committed.clear();
    });
  }

  /** The batch up to `lastOffset` of this partition is applied. */
  done(topic: string, partition: number, lastOffset: string): void {
    this.#done.set(`${topic}:${partition}`, { topic, partition, offset: String(BigInt(lastOffset) + 1n) });
  }

  start(): void {
    this.#timer ??= setInterval(() => void this.flush(), this.intervalMs);
  }

  /** One flush at a time; a tick that finds one running is skipped (its offsets wait for the next). */
  async flush(): Promise<void> {
    if (this.#flushing) return this.#flushing;
    this.#flushing = this.#flushOnce().finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  async #flushOnce(): Promise<void> {
    const offsets = [...this.#done.entries()].filter(([k, o]) => BigInt(o.offset) > (this.#committed.get(k) ?? -1n));
    this.#done = new Map();
    if (offsets.length === 0) return;
    try {
      await this.consumer.commitOffsets(offsets.map(([, o]) => o));
      for (const [k, o] of offsets) if (BigInt(o.offset) > (this.#committed.get(k) ?? -1n)) this.#committed.set(k, BigInt(o.offset));
    } catch (err) {
      // typically a rebalance in progress; keep what has not been superseded for the next tick
      for (const [k, o] of offsets) if (!this.#done.has(k)) this.#done.set(k, o);
      this.onError(err);
    }
  }

  /** Stops the timer and commits what is applied (call before disconnecting). */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#flushing;
    await this.flush();
  }
}
