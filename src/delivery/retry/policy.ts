// The retry policy as pure functions of configuration: what happens after a failed attempt, and
// whether an attempt may still be made at all. ladder.ts acts on these decisions.
//
// One list of delays (RETRY_DELAYS) is the whole policy: the delay before attempt n+1 is
// delays[n-1], each step has its own retry topic (src/kafka/topics.ts), and a run ends `dead` when
// it has made MAX_ATTEMPTS attempts or when the next attempt would fall later than MAX_MESSAGE_AGE
// after the run started. RETRY_TIME_SCALE multiplies every policy duration (delays, the 6 h cap,
// the age limit) and nothing else: a target's Retry-After is real time and is never scaled.
//
// Retry-After: honoured when longer than the step, capped at 6 h. The message is then parked on
// the shortest retry topic whose delay covers the wait (or the longest topic), so every record of
// a topic is due no later than its produce time + the topic's delay: a record held back by the one
// in front of it waits at most its own topic delay, never longer.
import type { Config } from '../../config.js';
import type { Topics } from '../../kafka/index.js';
import { isoToMicros, type OutboxMessage } from '../message.js';
import type { AttemptOutcome } from '../../outbound/index.js';

export const MAX_RETRY_WAIT_MS = 6 * 3_600_000;

export type Policy = Pick<Config, 'retryDelaysMs' | 'RETRY_TIME_SCALE' | 'MAX_ATTEMPTS' | 'MAX_MESSAGE_AGE'>;

export type RetryPlan =
  | { kind: 'retry'; topic: string; step: number; dueAt: number; waitMs: number }
  | { kind: 'dead'; reason: 'attempts' | 'age' };

const scaled = (p: Policy, ms: number) => Math.max(1, Math.round(ms * p.RETRY_TIME_SCALE));

/** Epoch ms from which the age budget of this run counts: the first enqueue, or a manual run's start. */
export function runStartedAt(msg: Pick<OutboxMessage, 'run' | 'firstCreatedAt' | 'runStartedAt'>): number {
  if (msg.run > 1 && msg.runStartedAt) return msg.runStartedAt;
  const micros = isoToMicros(msg.firstCreatedAt);
  return micros === undefined ? Date.now() : Math.floor(micros / 1000);
}

/**
 * The latest moment (epoch ms) an attempt of this run may be made. Time the run spent held while
 * its endpoint's circuit was open (header held-ms) is added: waiting for an endpoint that is down
 * does not consume the budget. That hold is bounded by ENDPOINT_DISABLE_AFTER (docs/delivery.md).
 */
export function deadline(p: Policy, msg: Pick<OutboxMessage, 'run' | 'firstCreatedAt' | 'runStartedAt' | 'heldMs'>): number {
  return runStartedAt(msg) + scaled(p, p.MAX_MESSAGE_AGE) + (msg.heldMs ?? 0);
}

/** What follows a failed attempt `msg.attempt` that ended at `now`. */
export function planRetry(p: Policy, topics: Pick<Topics, 'retry'>, msg: OutboxMessage, outcome: Pick<AttemptOutcome, 'retryAfterMs'>, now: number): RetryPlan {
  if (msg.attempt >= p.MAX_ATTEMPTS) return { kind: 'dead', reason: 'attempts' };
  const step = topics.retry[Math.min(msg.attempt, topics.retry.length) - 1];
  const stepWait = scaled(p, step.delayMs);
  const asked = outcome.retryAfterMs ?? 0;
  const waitMs = asked > stepWait ? Math.min(asked, scaled(p, MAX_RETRY_WAIT_MS)) : stepWait;
  const dueAt = now + waitMs;
  if (dueAt > deadline(p, msg)) return { kind: 'dead', reason: 'age' };
  const parking = topics.retry.find((t) => t.delayMs >= step.delayMs && scaled(p, t.delayMs) >= waitMs) ?? topics.retry.at(-1)!;
  return { kind: 'retry', topic: parking.topic, step: step.step, dueAt, waitMs };
}

/** A record taken after its run's deadline (a dispatcher outage outlived the budget) is not attempted. */
export function isExpired(p: Policy, msg: OutboxMessage, now: number): boolean {
  return now > deadline(p, msg);
}

/** The attempt times of the default schedule, for the documentation and its test. */
export function schedule(p: Policy): { attempt: number; atMs: number }[] {
  const out = [{ attempt: 1, atMs: 0 }];
  for (let a = 2; a <= p.MAX_ATTEMPTS; a++) out.push({ attempt: a, atMs: out[a - 2].atMs + scaled(p, p.retryDelaysMs[a - 2]) });
  return out;
}
