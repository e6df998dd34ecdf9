// The retry ladder: the seam between one attempt and what happens after it, and its Kafka
// implementation.
//
// The attempt pipeline (attempt/pipeline.ts) calls exactly one of these per attempt, after the
// channel has classified the outcome and BEFORE the outcome is recorded (event published, ledger
// row written) and the offset committed. So whatever the ladder does — produce the message to the next retry
// topic with attempt + 1 and a due-at, or to the dead topic — is done before the record says the
// attempt happened; a crash in between replays the attempt rather than losing the hand-off.
// Anything it produces must use encodeMessage() from ../message.ts so the envelope stays intact.
//
// The decision returned is what gets recorded:
//   final          true: this run has ended (no further attempt will be made); the ledger marks it
//                  so a redelivered record is never sent again, and the final event is what the
//                  callbacks (callbacks/consumer.ts) react to
//   status         the delivery's status after this attempt: 'failed' while retries remain (or when
//                  the run stopped on a failure), 'dead' when it ended without delivery
//   nextAttemptAt  epoch ms of the next attempt, when one is scheduled (shown on the delivery)
//
// The ladder on Kafka (KafkaRetryLadder): a failed attempt is produced at once to
// the retry topic of its next step with attempt + 1 and a due-at (consume/retry-consumer.ts makes it
// when due), or, when the budget is spent, to the dead topic; a dead outcome goes to the dead topic.
// Everything is produced before the pipeline records the attempt, so a crash in between replays
// the attempt (and the hand-off) rather than losing it. The policy itself is policy.ts.
import type { AppContext } from '../../context.js';
import { publishDeadLetter, type DeadReason } from './dead-letter.js';
import { encodeMessage, type OutboxMessage } from '../message.js';
import type { AttemptOutcome } from '../../outbound/index.js';
import { isExpired, planRetry } from './policy.js';

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

export class KafkaRetryLadder implements RetryLadder {
  constructor(private readonly ctx: Pick<AppContext, 'cfg' | 'topics' | 'producer' | 'log'>) {}

  async onFailed(msg: OutboxMessage, outcome: AttemptOutcome): Promise<LadderDecision> {
    const plan = planRetry(this.ctx.cfg, this.ctx.topics, msg, outcome, Date.now());
    if (plan.kind === 'dead') {
      await publishDeadLetter(this.ctx, msg, outcome, plan.reason);
      return { final: true, status: 'dead' };
    }
    await this.ctx.producer.send({
      topic: plan.topic,
      acks: -1,
      messages: [encodeMessage(msg, { attempt: msg.attempt + 1, dueAt: plan.dueAt })],
    });
    return { final: false, status: 'failed', nextAttemptAt: plan.dueAt };
  }

  async onDead(msg: OutboxMessage, outcome: AttemptOutcome): Promise<void> {
    await publishDeadLetter(this.ctx, msg, outcome, deadReasonOf(outcome));
  }

  beforeAttempt(msg: OutboxMessage): AttemptOutcome | undefined {
    if (!isExpired(this.ctx.cfg, msg, Date.now())) return undefined;
    return { outcome: 'dead', reason: 'expired', error: EXPIRED, durationMs: 0 };
  }
}

const EXPIRED = 'not attempted: the message outlived MAX_MESSAGE_AGE before this attempt could be made';

/**
 * The dead topic's reason for an outcome that ended a run at once: an operator replaying
 * `permanent` failures must not replay messages the service gave up on or a disabled webhook's.
 */
export function deadReasonOf(outcome: Pick<AttemptOutcome, 'reason'>): DeadReason {
  switch (outcome.reason) {
    case 'expired':
      return 'expired';
    case 'endpoint_given_up':
      return 'given_up';
    case 'webhook_disabled':
      return 'webhook_disabled';
    default:
      return 'permanent';
  }
}
