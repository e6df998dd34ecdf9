// The seam between one attempt and what happens after it (issue 5 builds the retry ladder here).
//
// The attempt pipeline (pipeline.ts) calls exactly one of these per attempt, after the channel has
// classified the outcome and BEFORE the outcome is recorded (event published, ledger row written)
// and the offset committed. So whatever the ladder does — produce the message to the next retry
// topic with attempt + 1 and a due-at, or to the dead topic — is done before the record says the
// attempt happened; a crash in between replays the attempt rather than losing the hand-off.
// Anything it produces must use encodeMessage() from message.ts so the envelope stays intact.
//
// The decision returned is what gets recorded:
//   final          true: this run has ended (no further attempt will be made); the ledger marks it
//                  so a redelivered record is never sent again, and the final event is what the
//                  callback machinery (issue 5) reacts to
//   status         the delivery's status after this attempt: 'failed' while retries remain (or when
//                  the run stopped on a failure), 'dead' when it ended without delivery
//   nextAttemptAt  epoch ms of the next attempt, when one is scheduled (shown on the delivery)
import type { OutboxMessage } from './message.js';
import type { AttemptOutcome } from './outcome.js';

export interface LadderDecision {
  final: boolean;
  status: 'failed' | 'dead';
  nextAttemptAt?: number;
}

export interface RetryLadder {
  /** A failed (retryable) outcome: schedule the next attempt, or end the run dead. */
  onFailed(msg: OutboxMessage, outcome: AttemptOutcome): Promise<LadderDecision>;
  /** A dead outcome (no retry by definition): e.g. publish to the dead topic. */
  onDead(msg: OutboxMessage, outcome: AttemptOutcome): Promise<void>;
  /**
   * Before an attempt: an outcome to record instead of making it (a run past its age budget ends
   * dead without a request), or undefined to attempt.
   */
  beforeAttempt?(msg: OutboxMessage): AttemptOutcome | undefined;
}

/**
 * Until the ladder exists: a failed attempt ends the run as `failed` and nothing is retried;
 * dead outcomes need no hand-off.
 */
export const noRetries: RetryLadder = {
  async onFailed() {
    return { final: true, status: 'failed' };
  },
  async onDead() {},
};
