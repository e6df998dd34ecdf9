// The platform's direct sender for auth emails (confirmations, magic links, ...): sent at once with
// the same SMTP resolution as outbox mail, but not through the outbox (docs/email.md, "The direct
// sender"): the caller is waiting and learns the result now instead of a delivery state later.
import { randomUUID } from 'node:crypto';
import type { AppContext } from '../context.js';
import type { AttemptOutcome } from '../outbound/index.js';
import { deliverEmail } from './send.js';

export interface DirectEmail {
  to: string;
  subject: string;
  html?: string;
  text?: string;
}

/** The server did not take the message; `outcome.outcome` says whether trying later may help. */
export class EmailNotSentError extends Error {
  constructor(readonly outcome: AttemptOutcome) {
    super(`email not sent (${outcome.outcome}): ${outcome.error ?? 'unknown reason'}`);
    this.name = 'EmailNotSentError';
  }
}

/** Sends now; resolves with the Message-ID and the server's reply, or throws EmailNotSentError. */
export async function sendDirectEmail(
  ctx: Pick<AppContext, 'cfg' | 'db' | 'box' | 'log'>,
  ref: string,
  mail: DirectEmail,
): Promise<{ id: string; response: string }> {
  const id = randomUUID();
  const outcome = await deliverEmail(ctx, ref, { id, ...mail });
  if (outcome.outcome !== 'delivered') throw new EmailNotSentError(outcome);
  return { id, response: outcome.responseBody ?? '' };
}
