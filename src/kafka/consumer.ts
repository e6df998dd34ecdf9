// Consumer plumbing every consumer group of the service shares: subscribing while a new topic's
// metadata settles, and committing offsets on a timer instead of after every batch.
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
