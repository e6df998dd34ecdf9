// Dead letters: a message whose run ended without delivery, on <prefix>.outbox.dead (kept forever),
// with the envelope of its last attempt and that attempt's outcome in headers. The value is the
// message exactly as SQL enqueued it, so a replay (recovery/replay.ts) republishes it unchanged.
//
// Extra headers:
//   dead-reason    permanent (non-retryable, docs/delivery.md) | attempts (MAX_ATTEMPTS made)
//                  | age (the next attempt would pass MAX_MESSAGE_AGE) | expired (taken after it)
//                  | given_up (its target host failed every probe for ENDPOINT_DISABLE_AFTER)
//                  | webhook_disabled (its webhook is disabled, by the owner or the service)
//   last-outcome   JSON {outcome, http_status, smtp_code, error, at}: what the delivery shows
// A crash between producing a dead letter and recording the attempt produces it again on the
// replayed attempt: readers keep one record per (project, id, run). The project is the record's
// `project` header (Connect's, carried over by encodeMessage): two projects may use one message id,
// and a reader (recovery/log-read.ts) takes only the records of the project it reads for.
import type { AppContext } from '../../context.js';
import { encodeMessage, type OutboxMessage } from '../message.js';
import type { AttemptOutcome } from '../../outbound/index.js';

export type DeadReason = 'permanent' | 'attempts' | 'age' | 'expired' | 'given_up' | 'webhook_disabled';

export interface LastOutcome {
  outcome: AttemptOutcome['outcome'];
  http_status: number | null;
  smtp_code: number | null;
  error: string | null;
  at: number;
}

export async function publishDeadLetter(ctx: Pick<AppContext, 'producer' | 'topics'>, msg: OutboxMessage, outcome: AttemptOutcome, reason: DeadReason): Promise<void> {
  const last: LastOutcome = {
    outcome: outcome.outcome,
    http_status: outcome.httpStatus ?? null,
    smtp_code: outcome.smtpCode ?? null,
    error: outcome.error ?? null,
    at: Date.now(),
  };
  await ctx.producer.send({
    topic: ctx.topics.dead,
    acks: -1,
    messages: [encodeMessage(msg, {}, { 'dead-reason': reason, 'last-outcome': JSON.stringify(last) })],
  });
}
