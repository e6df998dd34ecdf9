// The development mail sink: a real SMTP server (smtp-server) on loopback that accepts every message
// and keeps the most recent ones in memory, so a new user reads their first email at /dev/mail
// without configuring anything. It is on by default in development when SMTP_URL is unset
// (DEV_MAIL_SINK), and never runs with APP_ENV=production whatever the flag says.
import { randomUUID } from 'node:crypto';
import { simpleParser, type AddressObject } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { Config } from '../config.js';
import type { AppContext } from '../context.js';

export interface CaughtMail {
  id: string;
  received_at: string;
  envelope: { from: string | null; to: string[] };
  from: string | null;
  to: string | null;
  subject: string | null;
  message_id: string | null;
  text: string | null;
  html: string | null;
  size: number;
}

export interface DevMailSink {
  port: number;
  /** newest first */
  list(): CaughtMail[];
  get(id: string): CaughtMail | undefined;
  stop(): Promise<void>;
}

const CAPACITY = 200;
const MAX_MESSAGE_BYTES = 5 * 1024 * 1024;

export function devMailSinkEnabled(cfg: Pick<Config, 'DEV_MAIL_SINK' | 'APP_ENV'>): boolean {
  return cfg.DEV_MAIL_SINK && cfg.APP_ENV !== 'production';
}

// The sink of each running context, for the /dev/mail routes (main.ts starts it, routes read it).
const sinks = new WeakMap<object, DevMailSink>();
export const devMailSinkOf = (ctx: Pick<AppContext, 'cfg'>): DevMailSink | undefined => sinks.get(ctx.cfg);

/**
 * Starts the sink on 127.0.0.1:DEV_MAIL_SINK_PORT when enabled. If the port is taken (another
 * instance on this machine already runs a sink) it logs a warning and runs without one.
 */
export async function startDevMailSink(ctx: Pick<AppContext, 'cfg' | 'log'>): Promise<DevMailSink | null> {
  if (!devMailSinkEnabled(ctx.cfg)) return null;
  const caught: CaughtMail[] = [];
  const server = new SMTPServer({
    banner: 'development mail sink: messages are kept in memory, nothing is delivered',
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    allowInsecureAuth: true,
    // any credentials are fine: this only listens on loopback and delivers nowhere
    onAuth: (auth, _session, cb) => cb(null, { user: auth.username ?? 'dev' }),
    size: MAX_MESSAGE_BYTES,
    logger: false,
    closeTimeout: 1000,
    onData(stream, session, cb) {
      simpleParser(stream)
        .then((mail) => {
          if ((stream as unknown as { sizeExceeded?: boolean }).sizeExceeded) {
            return cb(Object.assign(new Error('message too large for the development sink'), { responseCode: 552 }));
          }
          caught.unshift({
            id: randomUUID(),
            received_at: new Date().toISOString(),
            envelope: {
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
              to: session.envelope.rcptTo.map((r) => r.address),
            },
            from: addressText(mail.from),
            to: addressText(mail.to),
            subject: mail.subject ?? null,
            message_id: mail.messageId ?? null,
            text: mail.text ?? null,
            html: mail.html || null,
            size: (stream as unknown as { byteLength?: number }).byteLength ?? 0,
          });
          caught.length = Math.min(caught.length, CAPACITY);
          cb();
        })
        .catch((err: Error) => cb(err));
    },
  });
  server.on('error', (err) => ctx.log.warn({ err }, 'development mail sink error'));

  const port = ctx.cfg.DEV_MAIL_SINK_PORT;
  try {
    await new Promise<void>((resolve, reject) => {
      server.server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.server.removeListener('error', reject);
        resolve();
      });
    });
  } catch (err) {
    ctx.log.warn({ err, port }, `development mail sink not started: port ${port} is in use (another instance may run one)`);
    return null;
  }
  ctx.log.info(`development mail sink on smtp://127.0.0.1:${port}; read caught mail at ${ctx.cfg.publicUrl}/dev/mail`);

  const sink: DevMailSink = {
    port,
    list: () => caught.slice(),
    get: (id) => caught.find((m) => m.id === id),
    stop: () =>
      new Promise<void>((resolve) => {
        sinks.delete(ctx.cfg);
        server.close(() => resolve());
      }),
  };
  sinks.set(ctx.cfg, sink);
  return sink;
}

function addressText(a: AddressObject | AddressObject[] | undefined): string | null {
  if (!a) return null;
  return (Array.isArray(a) ? a : [a]).map((x) => x.text).join(', ');
}
