// The email channel of the dispatcher: one attempt at an outbox message of kind 'email' (queued by
// base.send_email), through the project's SMTP or the platform default. The outcome mapping is in
// src/email/outcome.ts and docs/email.md.
import type { AppContext } from '../../context.js';
import { deliverEmail } from '../../email/index.js';
import type { AttemptOutcome } from '../../outbound/index.js';

export interface EmailMessage {
  id: string;
  project: string;
  payload: { recipient: string; subject: string; html: string | null; text: string | null };
}

export function sendEmailMessage(ctx: AppContext, msg: EmailMessage): Promise<AttemptOutcome> {
  const { recipient, subject, html, text } = msg.payload;
  return deliverEmail(ctx, msg.project, { id: msg.id, to: recipient, subject: subject ?? '', html, text });
}
