// One email, one attempt: resolve the project's SMTP route, send over its pooled transport, and
// classify the result (see outcome.ts). Shared by the outbox channel and the direct sender.
import type { AppContext } from '../context.js';
import type { AttemptOutcome } from '../outbound/index.js';
import { acceptedVerdict, classifySendError } from './outcome.js';
import { resolveSmtp, UnknownProjectError, withTransport, type Sender } from './transport.js';

export interface Email {
  /** stable across retries: becomes the Message-ID, so receivers can spot a duplicate */
  id: string;
  to: string;
  subject: string;
  html?: string | null;
  text?: string | null;
}

type Ctx = Pick<AppContext, 'cfg' | 'db' | 'box' | 'log'>;

/** A whole send (connect, greeting, TLS, AUTH, MAIL, RCPT, DATA) may take this many SMTP_TIMEOUTs. */
export const SEND_TIMEOUT_FACTOR = 2;

export async function deliverEmail(ctx: Ctx, ref: string, mail: Email): Promise<AttemptOutcome> {
  const started = Date.now();
  const limit = ctx.cfg.RESPONSE_BODY_LIMIT;
  let route;
  try {
    route = await resolveSmtp(ctx, ref);
  } catch (err) {
    if (err instanceof UnknownProjectError) return { outcome: 'dead', reason: 'not_configured', error: err.message, durationMs: Date.now() - started };
    throw err;
  }
  if (!route) {
    // An operator can still set SMTP_URL and restart within the retry budget, so this is not final.
    return { outcome: 'failed', reason: 'not_configured', error: 'no SMTP server is configured (set SMTP_URL, or project SMTP settings)', durationMs: Date.now() - started };
  }

  try {
    return await withTransport(ctx, route, async (pooled) => {
      // nodemailer's timeouts are per step and any byte from the server resets them, so a server
      // that trickles a reply held a send (and a dispatcher slot, and the releaser's tick waiting
      // on an owner notice) for as long as it liked (found by review, 2026-11-29). The whole send
      // has SEND_TIMEOUT_FACTOR × SMTP_TIMEOUT; past it the pool is closed (its connections with it:
      // the stuck one cannot be told apart) and built again for the next send.
      const deadline = SEND_TIMEOUT_FACTOR * ctx.cfg.SMTP_TIMEOUT;
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          pooled.discard();
          reject(Object.assign(new Error(`the SMTP exchange took longer than ${deadline} ms`), { code: 'ETIMEDOUT' }));
        }, deadline);
      });
      try {
        const info = await Promise.race([
          pooled.transport.sendMail({
            from: route.from,
            to: mail.to,
            subject: mail.subject,
            html: mail.html ?? undefined,
            text: mail.text ?? undefined,
            messageId: `<${mail.id}@${senderDomain(route.from)}>`,
          }),
          expired,
        ]);
        const verdict = acceptedVerdict(info.response, limit, pooled.secrets);
        ctx.log.debug({ project: ref, message: mail.id, smtp: route.key, source: route.source, smtpCode: verdict.smtpCode }, 'email accepted');
        return { ...verdict, durationMs: Date.now() - started };
      } catch (err) {
        const verdict = classifySendError(err, limit, pooled.secrets);
        ctx.log.debug({ project: ref, message: mail.id, smtp: route.key, source: route.source, outcome: verdict.outcome, smtpCode: verdict.smtpCode, reason: verdict.error }, 'email not accepted');
        return { ...verdict, durationMs: Date.now() - started };
      } finally {
        clearTimeout(timer);
      }
    });
  } catch (err) {
    // building the pool failed: the sealed password does not open (another master key, or a row
    // copied from another project); the settings must be saved again
    ctx.log.error({ project: ref, smtp: route.key, err: { message: (err as Error).message } }, 'SMTP settings unusable');
    return { outcome: 'failed', reason: 'not_configured', error: 'the SMTP settings could not be read', durationMs: Date.now() - started };
  }
}

function senderDomain(from: Sender): string {
  const address = typeof from === 'string' ? from : from.address;
  return /@([^>\s]+)>?\s*$/.exec(address)?.[1] ?? 'localhost';
}
