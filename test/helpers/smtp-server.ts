// A real SMTP server for tests (smtp-server on 127.0.0.1, random port) that records what it receives
// and can be told to answer a given reply (e.g. 451 or 550) at RCPT or DATA, for the next N messages
// or until told otherwise.
import type { AddressInfo } from 'node:net';
import { simpleParser, type AddressObject } from 'mailparser';
import { SMTPServer, type SMTPServerAuthentication } from 'smtp-server';

export interface ReceivedMail {
  envelopeFrom: string | null;
  envelopeTo: string[];
  from: { name: string; address: string } | null;
  to: string[];
  subject: string | undefined;
  text: string | undefined;
  html: string | false;
  messageId: string | undefined;
  contentTypes: string[];
  raw: string;
  /** username the session authenticated with, if any */
  user: string | null;
}

export interface Rejection {
  at: 'rcpt' | 'data';
  code: number;
  message?: string;
  /** how many messages get this answer; unlimited when omitted */
  times?: number;
}

export interface TestSmtpServer {
  port: number;
  url: string;
  received: ReceivedMail[];
  /** every AUTH attempt seen, with the password the client sent */
  logins: { user: string; pass: string }[];
  reject(r: Rejection | null): void;
  close(): Promise<void>;
}

export async function startSmtpServer(opts: { user?: string; pass?: string } = {}): Promise<TestSmtpServer> {
  const received: ReceivedMail[] = [];
  const logins: { user: string; pass: string }[] = [];
  let rejection: Rejection | null = null;

  const maybeReject = (at: Rejection['at']): Error | null => {
    if (!rejection || rejection.at !== at) return null;
    const r = rejection;
    if (r.times !== undefined && --r.times <= 0) rejection = null;
    return Object.assign(new Error(r.message ?? `test server says ${r.code}`), { responseCode: r.code });
  };

  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    authOptional: !opts.user,
    allowInsecureAuth: true,
    logger: false,
    closeTimeout: 200,
    onAuth(auth: SMTPServerAuthentication, _session, cb) {
      logins.push({ user: auth.username ?? '', pass: auth.password ?? '' });
      if (opts.user && (auth.username !== opts.user || auth.password !== opts.pass)) {
        return cb(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
      }
      cb(null, { user: auth.username });
    },
    onRcptTo(_address, _session, cb) {
      cb(maybeReject('rcpt') ?? undefined);
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const rejected = maybeReject('data');
        if (rejected) return cb(rejected);
        simpleParser(raw)
          .then((mail) => {
            const from = (mail.from as AddressObject | undefined)?.value[0];
            received.push({
              envelopeFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
              envelopeTo: session.envelope.rcptTo.map((r) => r.address),
              from: from ? { name: from.name, address: from.address ?? '' } : null,
              to: ([] as AddressObject[]).concat(mail.to ?? []).flatMap((a) => a.value.map((v) => v.address ?? '')),
              subject: mail.subject,
              text: mail.text,
              html: mail.html,
              messageId: mail.messageId,
              contentTypes: [...raw.matchAll(/^content-type:\s*([^;\r\n]+)/gim)].map((m) => m[1].toLowerCase()),
              raw,
              user: (session.user as string | undefined) ?? null,
            });
            cb();
          })
          .catch((err: Error) => cb(err));
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    received,
    logins,
    reject: (r) => void (rejection = r ? { ...r } : null),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
