// End to end: base.send_email in a project transaction → Debezium → Kafka → dispatcher → the
// project's SMTP server, with the outcome in the deliveries listing; and the SMTP password nowhere
// in logs, topics or tables afterwards.
import { Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { pino } from 'pino';
import { closeEmailTransports } from '../../src/email/transport.js';
import { eventually, stack } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp-server.js';

const PASSWORD = 'pw-' + randomUUID();

describe('email through the outbox', () => {
  let svc: TestService;
  let platform: TestSmtpServer;
  let smtp: TestSmtpServer;
  let project: TestProject;
  let db: pg.Client;
  const logLines: string[] = [];

  beforeAll(async () => {
    platform = await startSmtpServer();
    smtp = await startSmtpServer({ user: 'mailer', pass: PASSWORD });
    svc = await startTestService({
      roles: ['api', 'dispatcher', 'projector'],
      env: { SMTP_URL: platform.url, RETRY_TIME_SCALE: '0.001', SMTP_TIMEOUT: '5s' },
    });
    // every later log line of this service, at every level, is kept to be searched for the password
    svc.ctx.log = pino({ level: 'trace' }, new Writable({ write: (c, _e, cb) => (logLines.push(c.toString()), cb()) }));
    project = await svc.project('pro');
    const put = await svc.api(project.ownerToken, 'PUT', `/v1/projects/${project.ref}/smtp`, {
      host: '127.0.0.1',
      port: smtp.port,
      tls_mode: 'none',
      user: 'mailer',
      password: PASSWORD,
      sender_email: 'orders@shop.test',
      sender_name: 'Shop',
    });
    expect(put.status).toBe(201);
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    if (svc) closeEmailTransports(svc.ctx);
    await svc?.stop();
    await Promise.all([platform?.close(), smtp?.close()]);
  });

  const sendEmail = async (to: string, subject: string) =>
    (await db.query(`select base.send_email($1, $2, '<p>Order <b>#1042</b> shipped</p>', 'Order #1042 shipped') as id`, [to, subject])).rows[0].id as string;

  const delivery = async (id: string) => {
    const r = await svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/outbox/deliveries/${id}`);
    return r.status === 200 ? r.body : null;
  };

  it('delivers an email queued from SQL to the project SMTP server, listed with kind email and the reply', async () => {
    const id = await sendEmail('ada@example.com', 'Your order has shipped');
    const got = await eventually(async () => smtp.received.find((m) => m.envelopeTo.includes('ada@example.com')), 90_000, 'the email at the SMTP server');
    expect(got).toMatchObject({
      subject: 'Your order has shipped',
      from: { name: 'Shop', address: 'orders@shop.test' },
      to: ['ada@example.com'],
      user: 'mailer',
      messageId: `<${id}@shop.test>`,
    });
    expect(got.html).toContain('<b>#1042</b>');
    expect(got.text?.trim()).toBe('Order #1042 shipped');
    expect(platform.received).toHaveLength(0);

    const d = await eventually(async () => {
      const x = await delivery(id);
      return x?.status === 'delivered' ? x : null;
    }, 30_000, 'the delivered delivery');
    expect(d).toMatchObject({ kind: 'email', target: 'ada@example.com', total_attempts: 1 });
    expect(d.last_response_body).toMatch(/^250 /);
    const listed = await svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/outbox/deliveries?kind=email`);
    expect(listed.body.deliveries.map((x: { id: string }) => x.id)).toContain(id);
  });

  it('sends nothing for a rolled-back transaction', async () => {
    await db.query('begin');
    await sendEmail('rolled.back@example.com', 'never');
    await db.query('rollback');
    const after = await sendEmail('after.rollback@example.com', 'after');
    await eventually(async () => smtp.received.find((m) => m.envelopeTo.includes('after.rollback@example.com')), 90_000, 'the later email');
    // the deliveries view is a projection of the event log: it may trail the SMTP server by a moment
    expect(await eventually(async () => delivery(after), 30_000, 'the delivery row')).toBeTruthy();
    expect(smtp.received.some((m) => m.envelopeTo.includes('rolled.back@example.com'))).toBe(false);
  });

  // 451 → failed → the retry ladder (delays scaled down by RETRY_TIME_SCALE) → delivered.
  it('retries a 451 on the ladder and then delivers', async () => {
    smtp.reject({ at: 'rcpt', code: 451, message: 'greylisted, try again', times: 1 });
    const id = await sendEmail('grey@example.com', 'Greylisted');
    const d = await eventually(async () => {
      const x = await delivery(id);
      return x?.status === 'delivered' ? x : null;
    }, 90_000, 'the delivery after its retry');
    expect(d.total_attempts).toBe(2);
    const [first, second] = d.attempt_history;
    expect(first).toMatchObject({ outcome: 'failed', smtp_code: 451 });
    expect(first.error).toContain('451 greylisted, try again');
    expect(first.response_body).toContain('451 greylisted, try again');
    expect(second).toMatchObject({ outcome: 'delivered' });
    expect(smtp.received.filter((m) => m.envelopeTo.includes('grey@example.com'))).toHaveLength(1);
  });

  it('makes a 550 dead at once, without retrying', async () => {
    smtp.reject({ at: 'rcpt', code: 550, message: 'no such user here', times: 1 });
    const id = await sendEmail('nobody@example.com', 'Unknown user');
    const d = await eventually(async () => {
      const x = await delivery(id);
      return x?.status === 'dead' ? x : null;
    }, 90_000, 'the dead delivery');
    expect(d).toMatchObject({ total_attempts: 1, last_smtp_code: 550 });
    expect(d.last_error).toContain('550 no such user here');
    expect(smtp.received.some((m) => m.envelopeTo.includes('nobody@example.com'))).toBe(false);
  });

  it('never writes the SMTP password to logs, topics or tables', async () => {
    expect(smtp.logins.some((l) => l.pass === PASSWORD)).toBe(true);
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.join('\n')).not.toContain(PASSWORD);

    for (const conn of [svc.ctx.db, db]) {
      const tables = await conn.query<{ t: string }>(
        `select format('%I.%I', table_schema, table_name) as t from information_schema.tables
          where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`,
      );
      for (const { t } of tables.rows) {
        const hit = await conn.query(`select 1 from ${t} x where x::text like '%' || $1 || '%' limit 1`, [PASSWORD]);
        expect(hit.rowCount, `table ${t}`).toBe(0);
      }
    }

    const kafka = new Kafka({ brokers: stack().kafkaBrokers, clientId: 'email-secrets-scan', logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${svc.cfg.TOPIC_PREFIX}.`));
    const ends = new Map<string, number>();
    for (const t of topics) for (const p of await admin.fetchTopicOffsets(t)) ends.set(`${t}/${p.partition}`, Number(p.high));
    await admin.disconnect();
    const pending = new Set([...ends].filter(([, high]) => high > 0).map(([k]) => k));
    expect(pending.size).toBeGreaterThan(0);
    const consumer = kafka.consumer({ groupId: `scan-${randomUUID()}` });
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    let scanned = 0;
    const leaks: string[] = [];
    await consumer.run({
      eachMessage: async ({ topic, partition, message }) => {
        scanned++;
        const headers = Object.values(message.headers ?? {}).map((v) => String(v));
        if ([message.value?.toString('latin1') ?? '', message.key?.toString() ?? '', ...headers].some((s) => s.includes(PASSWORD))) leaks.push(topic);
        if (Number(message.offset) + 1 >= ends.get(`${topic}/${partition}`)!) pending.delete(`${topic}/${partition}`);
      },
    });
    await eventually(async () => pending.size === 0, 60_000, 'every topic read to its end');
    await consumer.disconnect();
    expect(scanned).toBeGreaterThan(0);
    expect(leaks).toEqual([]);
  });
});
