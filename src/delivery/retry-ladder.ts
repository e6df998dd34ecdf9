// The retry ladder on Kafka (the RetryLadder of ladder.ts): a failed attempt is produced at once to
// the retry topic of its next step with attempt + 1 and a due-at (retry-consumer.ts makes it when
// due), or, when the budget is spent, to the dead topic; a dead outcome goes to the dead topic.
// Everything is produced before the pipeline records the attempt, so a crash in between replays
// the attempt (and the hand-off) rather than losing it. The policy itself is retry-policy.ts.
import type { AppContext } from '../context.js';
import { publishDeadLetter } from './dead-letter.js';
import type { LadderDecision, RetryLadder } from './ladder.js';
import { encodeMessage, type OutboxMessage } from './message.js';
import type { AttemptOutcome } from './outcome.js';
import { isExpired, planRetry } from './retry-policy.js';

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
    await publishDeadLetter(this.ctx, msg, outcome, outcome.error === EXPIRED ? 'expired' : 'permanent');
  }

  beforeAttempt(msg: OutboxMessage): AttemptOutcome | undefined {
    if (!isExpired(this.ctx.cfg, msg, Date.now())) return undefined;
    return { outcome: 'dead', error: EXPIRED, durationMs: 0 };
  }
}

const EXPIRED = 'not attempted: the message outlived MAX_MESSAGE_AGE before this attempt could be made';
