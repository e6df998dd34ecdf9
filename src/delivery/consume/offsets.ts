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

  /** The oldest offset begun and not finished, or null. */
  oldestUnfinished(): number | null {
    let low: number | null = null;
    for (const o of this.#inflight) if (low === null || o < low) low = o;
    return low;
  }

  /** The offset to commit (Kafka's "next to read"), or null when it would not move forward. */
  committable(): number | null {
    if (this.#high < 0) return null;
    const low = this.oldestUnfinished() ?? this.#high + 1;
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

/**
 * One attempt's slot in the dispatcher's Limiter. An attempt waiting for its endpoint's window
 * (endpoints/window.ts) gives it back (yield) and takes one again before it sends (retake), so
 * messages queued for one slow endpoint do not hold every slot; done() releases it if held.
 */
export class LimiterSlot {
  #held = true;

  constructor(
    private readonly limiter: Limiter,
    private readonly whileWaiting: () => Promise<void>,
    private readonly cancelled: () => boolean,
  ) {}

  get source(): object {
    return this.limiter;
  }

  yield(): void {
    if (!this.#held) return;
    this.#held = false;
    this.limiter.release();
  }

  async retake(): Promise<boolean> {
    if (this.#held) return true;
    this.#held = await this.limiter.acquire(this.whileWaiting, this.cancelled);
    return this.#held;
  }

  done(): void {
    this.yield();
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
