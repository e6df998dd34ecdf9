// The email channel against real SMTP servers: what arrives, which server is chosen, and how every
// kind of answer maps onto delivered / failed / dead.
import net from 'node:net';
import { Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { sendEmailMessage } from '../../src/delivery/channels/email.js';
import { EmailNotSentError, sendDirectEmail } from '../../src/email/direct.js';
import { closeEmailTransports } from '../../src/email/transport.js';
import { aad } from '../../src/lib/secret-box.js';
import type { AppContext } from '../../src/context.js';
import { freePort, startTestService, type TestService } from '../helpers/service.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp-server.js';

const PASSWORD = 'pw-' + randomUUID();

describe('email channel', () => {
  let svc: TestService;
  let platform: TestSmtpServer;
  let custom: TestSmtpServer;
  let silent: net.Server;
  let silentPort: number;

  beforeAll(async () => {
    platform = await startSmtpServer();
    custom = await startSmtpServer({ user: 'mailer', pass: PASSWORD });
    // accepts TCP but never greets: the attempt must end as a timeout
    silent = net.createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    silentPort = (silent.address() as net.AddressInfo).port;
    svc = await startTestService({ env: { SMTP_URL: platform.url, SMTP_FROM: 'Platform <no-reply@platform.test>', SMTP_TIMEOUT: '2s' } });
  });

  afterAll(async () => {
    if (svc) closeEmailTransports(svc.ctx);
    await svc?.stop();
    await Promise.all([platform?.close(), custom?.close(), new Promise((r) => silent?.close(r))]);
  });

  const email = (project: string, over: Partial<{ recipient: string; subject: string; html: string | null; text: string | null }> = {}) => ({
    id: randomUUID(),
    project,
    payload: { recipient: 'user@example.com', subject: 'Hello', html: '<p>Hi <b>there</b></p>', text: 'Hi there', ...over },
  });

  async function setSmtp(ref: string, s: { port: number; host?: string; user?: string | null; password?: string | null; sender?: string; name?: string | null; tls?: string }) {
    const sealed = s.password ? svc.ctx.box.seal(s.password, aad.smtpPassword(ref)) : null;
    await svc.ctx.db.query(
      `insert into smtp_settings (project_ref, host, port, username, password_enc, sender_email, sender_name, tls_mode)
       values ($1, $2, $3, $4, $5, $6, $7, $8)
       on conflict (project_ref) do update set host = excluded.host, port = excluded.port, username = excluded.username,
         password_enc = excluded.password_enc, sender_email = excluded.sender_email, sender_name = excluded.sender_name,
         tls_mode = excluded.tls_mode, updated_at = clock_timestamp()`,
      [ref, s.host ?? '127.0.0.1', s.port, s.user ?? null, sealed, s.sender ?? 'hello@acme.test', s.name === undefined ? 'Acme' : s.name, s.tls ?? 'none'],
    );
  }

  it('delivers through the platform default with recipient, subject, HTML and text parts and the platform sender', async () => {
    const p = await svc.project('free');
    const msg = email(p.ref, { recipient: 'first@example.com', subject: 'Welcome aboard' });
    const out = await sendEmailMessage(svc.ctx, msg);
    expect(out).toMatchObject({ outcome: 'delivered', smtpCode: 250 });
    expect(out.responseBody).toMatch(/^250 /);
    const got = platform.received.find((m) => m.envelopeTo.includes('first@example.com'))!;
    expect(got).toBeDefined();
    expect(got.to).toEqual(['first@example.com']);
    expect(got.subject).toBe('Welcome aboard');
    expect(got.html).toContain('<p>Hi <b>there</b></p>');
    expect(got.text?.trim()).toBe('Hi there');
    expect(got.contentTypes).toEqual(expect.arrayContaining(['multipart/alternative', 'text/plain', 'text/html']));
    expect(got.from).toEqual({ name: 'Platform', address: 'no-reply@platform.test' });
    expect(got.envelopeFrom).toBe('no-reply@platform.test');
    // the outbox id is the Message-ID, identical on every retry
    expect(got.messageId).toBe(`<${msg.id}@platform.test>`);
  });

  it("prefers the project's own SMTP (plan custom_smtp) and sends as its sender", async () => {
    const p = await svc.project('pro');
    await setSmtp(p.ref, { port: custom.port, user: 'mailer', password: PASSWORD, sender: 'news@acme.test', name: 'Acme News' });
    const before = platform.received.length;
    const out = await sendEmailMessage(svc.ctx, email(p.ref, { recipient: 'custom@example.com', subject: 'From Acme' }));
    expect(out.outcome).toBe('delivered');
    const got = custom.received.find((m) => m.envelopeTo.includes('custom@example.com'))!;
    expect(got).toMatchObject({ subject: 'From Acme', user: 'mailer', from: { name: 'Acme News', address: 'news@acme.test' } });
    expect(custom.logins.at(-1)).toEqual({ user: 'mailer', pass: PASSWORD });
    expect(platform.received.length).toBe(before);
  });

  it('uses the platform default when the plan lacks custom_smtp, even with settings stored', async () => {
    const p = await svc.project('free');
    await setSmtp(p.ref, { port: custom.port, user: 'mailer', password: PASSWORD });
    const out = await sendEmailMessage(svc.ctx, email(p.ref, { recipient: 'downgraded@example.com' }));
    expect(out.outcome).toBe('delivered');
    expect(platform.received.some((m) => m.envelopeTo.includes('downgraded@example.com'))).toBe(true);
    expect(custom.received.some((m) => m.envelopeTo.includes('downgraded@example.com'))).toBe(false);
  });

  it('follows changed settings at once (a new pool per configuration)', async () => {
    const other = await startSmtpServer();
    try {
      const p = await svc.project('enterprise');
      await setSmtp(p.ref, { port: custom.port, user: 'mailer', password: PASSWORD });
      expect((await sendEmailMessage(svc.ctx, email(p.ref, { recipient: 'v1@example.com' }))).outcome).toBe('delivered');
      await setSmtp(p.ref, { port: other.port, user: null, password: null, sender: 'v2@acme.test', name: null });
      expect((await sendEmailMessage(svc.ctx, email(p.ref, { recipient: 'v2@example.com' }))).outcome).toBe('delivered');
      expect(other.received.map((m) => m.envelopeTo[0])).toEqual(['v2@example.com']);
      expect(other.received[0].from).toEqual({ name: '', address: 'v2@acme.test' });
    } finally {
      closeEmailTransports(svc.ctx);
      await other.close();
    }
  });

  it('maps 4xx replies to failed and 5xx replies to dead, keeping the reply', async () => {
    const p = await svc.project('free');
    const cases = [
      { at: 'rcpt', code: 451, outcome: 'failed' },
      { at: 'data', code: 452, outcome: 'failed' },
      { at: 'rcpt', code: 550, outcome: 'dead' },
      { at: 'data', code: 554, outcome: 'dead' },
    ] as const;
    for (const c of cases) {
      platform.reject({ at: c.at, code: c.code, message: `no thanks ${c.code}`, times: 1 });
      const out = await sendEmailMessage(svc.ctx, email(p.ref));
      expect(out, `${c.code} at ${c.at}`).toMatchObject({ outcome: c.outcome, smtpCode: c.code });
      expect(out.responseBody).toContain(`${c.code} no thanks ${c.code}`);
      expect(out.error).toContain(`no thanks ${c.code}`);
    }
    // the rejection was used up: the next message goes through again
    expect((await sendEmailMessage(svc.ctx, email(p.ref))).outcome).toBe('delivered');
  });

  it('maps a refused connection and a server that never answers to failed', async () => {
    const p = await svc.project('pro');
    await setSmtp(p.ref, { port: await freePort() });
    const refused = await sendEmailMessage(svc.ctx, email(p.ref));
    expect(refused.outcome).toBe('failed');
    expect(refused.smtpCode).toBeUndefined();
    expect(refused.error).toMatch(/ECONNREFUSED/);

    await setSmtp(p.ref, { port: silentPort });
    const silentOut = await sendEmailMessage(svc.ctx, email(p.ref));
    expect(silentOut.outcome).toBe('failed');
    expect(silentOut.error).toMatch(/timeout/i);
  });

  it('refuses a project SMTP host at an internal address as dead, without connecting', async () => {
    const p = await svc.project('pro');
    await setSmtp(p.ref, { host: '169.254.169.254', port: 25 });
    const out = await sendEmailMessage(svc.ctx, email(p.ref));
    expect(out.outcome).toBe('dead');
    expect(out.error).toMatch(/blocked target/);
  });

  it('with tls_mode starttls, never logs in over a connection that cannot be upgraded (dead on the 5xx)', async () => {
    const p = await svc.project('pro');
    await setSmtp(p.ref, { port: custom.port, user: 'mailer', password: PASSWORD, tls: 'starttls' });
    const logins = custom.logins.length;
    const out = await sendEmailMessage(svc.ctx, email(p.ref));
    // the server's 5xx to STARTTLS is as permanent as any other 5xx: these settings cannot work
    expect(out).toMatchObject({ outcome: 'dead', smtpCode: expect.any(Number) });
    expect(out.smtpCode).toBeGreaterThanOrEqual(500);
    expect(out.error).toMatch(/TLS/);
    expect(custom.logins.length).toBe(logins);
  });

  it('fails, without sending, when the sealed password does not open (a row copied from another project)', async () => {
    const p = await svc.project('pro');
    const q = await svc.project('pro');
    await setSmtp(q.ref, { port: custom.port, user: 'mailer', password: PASSWORD });
    await svc.ctx.db.query(
      `insert into smtp_settings (project_ref, host, port, username, password_enc, sender_email, tls_mode)
       select $1, host, port, username, password_enc, sender_email, tls_mode from smtp_settings where project_ref = $2`,
      [p.ref, q.ref],
    );
    const logins = custom.logins.length;
    const out = await sendEmailMessage(svc.ctx, email(p.ref));
    expect(out).toMatchObject({ outcome: 'failed', error: 'the SMTP settings could not be read' });
    expect(custom.logins.length).toBe(logins);
  });

  it('maps a refused login (535) to dead', async () => {
    const p = await svc.project('pro');
    await setSmtp(p.ref, { port: custom.port, user: 'mailer', password: 'not-the-password' });
    const out = await sendEmailMessage(svc.ctx, email(p.ref));
    expect(out).toMatchObject({ outcome: 'dead', smtpCode: 535 });
    expect(out.error).toMatch(/authentication/);
  });

  it('fails (to be retried) when no SMTP is configured at all', async () => {
    const p = await svc.project('free');
    const bare = { ...svc.ctx, cfg: Object.freeze({ ...svc.cfg, SMTP_URL: undefined, DEV_MAIL_SINK: false }) } as AppContext;
    const out = await sendEmailMessage(bare, email(p.ref));
    expect(out).toMatchObject({ outcome: 'failed', error: expect.stringMatching(/no SMTP server is configured/) });
  });

  it('sends auth emails directly with the same resolution, and reports a refusal', async () => {
    const p = await svc.project('pro');
    await setSmtp(p.ref, { port: custom.port, user: 'mailer', password: PASSWORD, sender: 'auth@acme.test' });
    const sent = await sendDirectEmail(svc.ctx, p.ref, { to: 'login@example.com', subject: 'Your sign-in link', text: 'Click' });
    expect(sent.response).toMatch(/^250 /);
    const got = custom.received.find((m) => m.envelopeTo.includes('login@example.com'))!;
    expect(got).toMatchObject({ subject: 'Your sign-in link', from: { address: 'auth@acme.test' } });
    expect(got.messageId).toBe(`<${sent.id}@acme.test>`);

    custom.reject({ at: 'rcpt', code: 550, times: 1 });
    const err = await sendDirectEmail(svc.ctx, p.ref, { to: 'nobody@example.com', subject: 'x', text: 'y' }).catch((e) => e);
    expect(err).toBeInstanceOf(EmailNotSentError);
    expect(err.outcome).toMatchObject({ outcome: 'dead', smtpCode: 550 });
  });

  it('never puts the SMTP password in logs, outcomes or tables', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, cb) => (lines.push(chunk.toString()), cb()) });
    // a fresh configuration object means fresh pools, so connecting and logging in happen under capture
    const capture = { ...svc.ctx, cfg: Object.freeze({ ...svc.cfg }), log: pino({ level: 'trace' }, sink) } as AppContext;
    const p = await svc.project('pro');
    await setSmtp(p.ref, { port: custom.port, user: 'mailer', password: PASSWORD });
    const outcomes = [await sendEmailMessage(capture, email(p.ref))];
    custom.reject({ at: 'rcpt', code: 451, times: 1 });
    outcomes.push(await sendEmailMessage(capture, email(p.ref)));
    await setSmtp(p.ref, { port: custom.port, user: 'mailer', password: PASSWORD + '-wrong' });
    outcomes.push(await sendEmailMessage(capture, email(p.ref)));
    closeEmailTransports(capture);

    expect(outcomes.map((o) => o.outcome)).toEqual(['delivered', 'failed', 'dead']);
    expect(custom.logins.some((l) => l.pass === PASSWORD)).toBe(true);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain(PASSWORD);
    expect(JSON.stringify(outcomes)).not.toContain(PASSWORD);

    const tables = await svc.ctx.db.query<{ t: string }>(`select quote_ident(table_name) as t from information_schema.tables where table_schema = 'public'`);
    for (const { t } of tables.rows) {
      const hit = await svc.ctx.db.query(`select 1 from ${t} x where x::text like '%' || $1 || '%' limit 1`, [PASSWORD]);
      expect(hit.rowCount, `table ${t}`).toBe(0);
    }
  });
  /** An SMTP server that greets and then answers EHLO with `onEhlo` (it never finishes a reply). */
  async function hostileSmtp(onEhlo: (s: net.Socket) => void): Promise<{ port: number; close: () => void }> {
    const sockets = new Set<net.Socket>();
    const server = net.createServer((sock) => {
      sockets.add(sock);
      sock.on('error', () => {});
      sock.on('close', () => sockets.delete(sock));
      sock.write('220 hostile.example ESMTP\r\n');
      sock.once('data', () => onEhlo(sock));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return {
      port: (server.address() as net.AddressInfo).port,
      close: () => {
        for (const sock of sockets) sock.destroy();
        server.close();
      },
    };
  }

  // Found by review (2026-11-29): nodemailer's timeouts are per step and reset by any byte, so a
  // project's own SMTP server could hold a send (a dispatcher slot; the releaser's tick, waiting on
  // an owner notice) for ever, and one endless reply line stalled the event loop for seconds.
  it('ends a send whose server trickles its reply for ever, at twice SMTP_TIMEOUT, as a timeout', async () => {
    const srv = await hostileSmtp((sock) => {
      const t = setInterval(() => sock.writable && sock.write('250-still-thinking\r\n'), 500);
      sock.on('close', () => clearInterval(t));
    });
    try {
      const p = await svc.project('pro');
      await setSmtp(p.ref, { port: srv.port });
      const out = await sendEmailMessage(svc.ctx, email(p.ref));
      expect(out).toMatchObject({ outcome: 'failed', reason: 'timeout' });
      expect(out.error).toContain('took longer than 4000 ms');
    } finally {
      srv.close();
    }
  });

  it('ends a send whose server sends one endless reply line, once it has sent 2 MB', async () => {
    const srv = await hostileSmtp((sock) => {
      const chunk = Buffer.alloc(64 * 1024, 'A');
      sock.write('250-');
      const pump = () => {
        while (sock.writable && sock.write(chunk));
        if (sock.writable) sock.once('drain', pump);
      };
      pump();
    });
    try {
      const p = await svc.project('pro');
      await setSmtp(p.ref, { port: srv.port });
      const out = await sendEmailMessage(svc.ctx, email(p.ref));
      expect(out.outcome).toBe('failed');
      expect(out.error).toContain('sent more than 2097152 bytes');
    } finally {
      srv.close();
    }
  });
});
