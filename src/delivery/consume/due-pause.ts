// Pauses a retry topic's partition until its head record is due: the consumer pauses the partition
// and a timer resumes it at the record's due-at, so no handler ever sleeps. While paused, kafkajs
// keeps fetching the other partitions and heartbeating (with every partition paused it heartbeats
// between empty fetches), so group membership stays healthy however long the wait.
//
// Records of one retry topic are due in produce order, up to a Retry-After stretch (retry/policy.ts),
// so pausing on the head delays a record at most until its own topic delay has passed.
import type { Consumer } from 'kafkajs';
import type { OutboxMessage } from '../message.js';

export class DuePause {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  #closed = false;

  /** true when `msg` is not due: its partition is paused until it is. */
  readonly pauseUntilDue = (consumer: Consumer, topic: string, partition: number, msg: OutboxMessage): boolean => {
    const wait = msg.dueAt - Date.now();
    if (wait <= 0) return false;
    const tp = [{ topic, partitions: [partition] }];
    consumer.pause(tp);
    if (this.#closed) return true;
    const key = `${topic}:${partition}`;
    clearTimeout(this.#timers.get(key));
    this.#timers.set(
      key,
      setTimeout(() => {
        this.#timers.delete(key);
        if (this.#closed) return;
        try {
          consumer.resume(tp);
        } catch {
          // The consumer is restarting after a crash (the broker went away): kafkajs throws "not
          // initialized" from resume() then. Thrown in a timer it used to take the process down;
          // the restarted consumer starts with nothing paused and pauses on the record again if needed.
        }
      }, wait),
    );
    return true;
  };

  /** Before the consumer stops: no timer may resume a partition behind its back. */
  close(): void {
    this.#closed = true;
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
  }

  /** partitions currently paused */
  get paused(): number {
    return this.#timers.size;
  }
}
