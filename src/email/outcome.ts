// How the result of one SMTP send maps onto the delivery states (docs/email.md, "Outcomes"). The
// rule is the SMTP reply class: 2xx accepted → delivered; 4xx is the server saying "not now" →
// failed (retried on the ladder); 5xx is "never" → dead. Without a reply, network trouble (refused,
// dropped, timed out, DNS, TLS) is transient → failed; a message nodemailer refuses to send as it
// is (bad address, too big) or a target the SSRF guard refuses will never succeed → dead.
import { blockedTargetText, findBlockedTargetError } from '../outbound/index.js';
import type { AttemptOutcome } from '../outbound/index.js';

export type SendVerdict = Omit<AttemptOutcome, 'durationMs'>;

interface NodemailerError {
  code?: string;
  responseCode?: number;
  response?: string;
  message?: string;
  rejectedErrors?: NodemailerError[];
}

// Errors nodemailer raises before talking to the server about this message, or about the message
// itself: sending the same message again cannot help.
const PERMANENT_WITHOUT_REPLY = new Set(['EENVELOPE', 'EMESSAGE', 'EREQUIRETLS']);

export function acceptedVerdict(response: string, limit: number, secrets: string[] = []): SendVerdict {
  const reply = scrub(response, secrets);
  return { outcome: 'delivered', reason: 'accepted', smtpCode: replyCode(reply), responseBody: truncate(reply, limit) };
}

export function classifySendError(err: unknown, limit: number, secrets: string[] = []): SendVerdict {
  const blocked = findBlockedTargetError(err);
  if (blocked) return { outcome: 'dead', reason: 'blocked_target', error: blockedTargetText(blocked) };

  const e = (typeof err === 'object' && err !== null ? err : { message: String(err) }) as NodemailerError;
  // With one recipient, "all recipients were rejected" carries that recipient's own RCPT reply.
  const rcpt = e.rejectedErrors?.[0];
  const code = rcpt?.responseCode ?? e.responseCode;
  const reply = rcpt?.response ?? e.response;
  if (code && code >= 400 && code < 600) {
    const text = scrub(reply ?? String(code), secrets);
    return {
      outcome: code >= 500 ? 'dead' : 'failed',
      reason: 'smtp_reply',
      smtpCode: code,
      error: truncate(`${describe(e.code)} ${text}`, 1000),
      responseBody: truncate(text, limit),
    };
  }
  const message = scrub(e.message ?? 'unknown error', secrets);
  const permanent = !!e.code && PERMANENT_WITHOUT_REPLY.has(e.code);
  return {
    outcome: permanent ? 'dead' : 'failed',
    reason: permanent ? 'invalid_request' : e.code === 'ETIMEDOUT' ? 'timeout' : 'network',
    error: truncate(`${describe(e.code)} ${message}`, 1000),
  };
}

function describe(code: string | undefined): string {
  switch (code) {
    case 'EENVELOPE':
      return 'recipient or sender refused:';
    case 'EAUTH':
      return 'SMTP authentication failed:';
    case 'ETIMEDOUT':
      return 'SMTP timeout:';
    case 'EDNS':
      return 'SMTP host not resolved:';
    case 'ETLS':
      return 'SMTP TLS failed:';
    case 'EMESSAGE':
      return 'message refused:';
    default:
      return 'SMTP error:';
  }
}

function replyCode(reply: string): number | undefined {
  const m = /^(\d{3})/.exec(reply);
  return m ? Number(m[1]) : undefined;
}

/** Second line of defence: a secret that somehow appears in a reply or message is cut out. */
function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('[redacted]');
  return out;
}

function truncate(text: string, limit: number): string {
  return text.length > limit ? text.slice(0, limit) : text;
}
