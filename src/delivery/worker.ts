// What the delivery side runs: workers (consumers, timers) that main.ts stops on shutdown, and how a
// consumer that crashed for good is reported.
//
// A kafkajs consumer that crashes without restarting (a non-retriable error, e.g. a group protocol
// or authorization error) has stopped consuming for good while the process lives on, idle, and
// looks healthy to a supervisor. Workers report such a crash to `onFatal`; main.ts exits on it so
// the supervisor starts the process afresh.
import type { Consumer } from 'kafkajs';
import type { AppContext } from '../context.js';

/** A running background worker of the dispatcher or projector role. */
export interface Worker {
  name: string;
  stop(): Promise<void>;
}

export type OnFatal = (err: Error, worker: string) => void;

/** Without a handler from the caller (tests, tools): log it, the process keeps running. */
export const logFatal =
  (ctx: Pick<AppContext, 'log'>): OnFatal =>
  (err, worker) =>
    ctx.log.error({ err, worker }, 'consumer crashed and will not restart');

export function reportCrashes(consumer: Consumer, worker: string, onFatal: OnFatal): void {
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!payload.restart) onFatal(payload.error, worker);
  });
}
