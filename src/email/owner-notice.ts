// Notices to a project's owner (an endpoint disabled for failing, a provider activated through a
// setup link): sent at once through the project's own email path (its SMTP settings, else the
// platform default, the same resolution and guard as every email of the service), to the address of
// the owner account.
//
// A notice never fails the change it reports: the change is made and audited whether or not the
// mail went out. The result is returned so the caller can put it in the audit entry, and a mail not
// sent is logged with the reason (the SMTP server's answer, never a credential).
import type { AppContext } from '../context.js';
import { EmailNotSentError, sendDirectEmail } from './direct.js';

export interface OwnerNotice {
  subject: string;
  text: string;
  html?: string;
}

export type NoticeResult = { sent: true; to: string; id: string } | { sent: false; to: string | null; reason: string };

type Ctx = Pick<AppContext, 'cfg' | 'db' | 'box' | 'log'>;

/** The email address of the project's owner, or null for an unknown project. */
export async function ownerEmailOf(ctx: Pick<AppContext, 'db'>, ref: string): Promise<string | null> {
  const r = await ctx.db.query('select o.email from projects p join owners o on o.id = p.owner_id where p.ref = $1', [ref]);
  return r.rows[0]?.email ?? null;
}

export async function notifyOwner(ctx: Ctx, ref: string, notice: OwnerNotice): Promise<NoticeResult> {
  const to = await ownerEmailOf(ctx, ref).catch(() => null);
  if (!to) return { sent: false, to: null, reason: 'the project has no owner address' };
  try {
    const { id } = await sendDirectEmail(ctx, ref, { to, subject: notice.subject, text: notice.text, html: notice.html });
    ctx.log.info({ project: ref, subject: notice.subject }, 'owner notified by email');
    return { sent: true, to, id };
  } catch (err) {
    const reason = err instanceof EmailNotSentError ? (err.outcome.error ?? err.outcome.outcome) : 'internal error';
    ctx.log.warn({ project: ref, subject: notice.subject, reason }, 'owner notice not sent');
    return { sent: false, to, reason };
  }
}
