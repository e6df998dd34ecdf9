// The development mail sink: with no SMTP configured, mail lands in a real SMTP server on loopback
// and can be read at /dev/mail; with APP_ENV=production neither the sink nor the routes exist.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { sendEmailMessage } from '../../src/delivery/channels/email.js';
import { devMailSinkEnabled, startDevMailSink, type DevMailSink } from '../../src/email/dev-sink.js';
import { closeEmailTransports } from '../../src/email/transport.js';
import { buildServer } from '../../src/http/server.js';
import { accessVerifiers, registerRoutes } from '../../src/routes.js';
import { freePort, startTestService, type TestService } from '../helpers/service.js';

describe('development mail sink', () => {
  let svc: TestService;
  let sink: DevMailSink | null;

  beforeAll(async () => {
    svc = await startTestService({ env: { DEV_MAIL_SINK: 'true', DEV_MAIL_SINK_PORT: String(await freePort()) } });
    sink = await startDevMailSink(svc.ctx);
  });

  afterAll(async () => {
    if (svc) closeEmailTransports(svc.ctx);
    await sink?.stop();
    await svc?.stop();
  });

  it('catches mail when no SMTP is configured and shows it at /dev/mail', async () => {
    expect(sink).not.toBeNull();
    const p = await svc.project('free');
    const id = crypto.randomUUID();
    const out = await sendEmailMessage(svc.ctx, {
      id,
      project: p.ref,
      payload: { recipient: 'new.user@example.com', subject: 'Your first email', html: '<h1>It works</h1><script>alert(1)</script>', text: 'It works' },
    });
    expect(out.outcome).toBe('delivered');

    const list = await svc.api(null, 'GET', '/dev/mail?to=new.user@example.com');
    expect(list.status).toBe(200);
    expect(list.body.sink).toBe(`smtp://127.0.0.1:${sink!.port}`);
    expect(list.body.messages).toHaveLength(1);
    const summary = list.body.messages[0];
    expect(summary).toMatchObject({ to: 'new.user@example.com', subject: 'Your first email', url: `${svc.url}/dev/mail/${summary.id}` });

    const one = await svc.api(null, 'GET', `/dev/mail/${summary.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      envelope: { to: ['new.user@example.com'] },
      message_id: `<${id}@localhost>`,
      text: expect.stringContaining('It works'),
      html: expect.stringContaining('<h1>It works</h1>'),
      html_url: `${svc.url}/dev/mail/${summary.id}/html`,
    });

    const page = await fetch(one.body.html_url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toBe('sandbox');
    expect(await page.text()).toContain('<h1>It works</h1>');

    const other = await svc.api(null, 'GET', '/dev/mail?to=someone.else@example.com');
    expect(other.body.messages).toEqual([]);
  });

  it('answers 404 for an unknown message and 400 for unknown query fields', async () => {
    const missing = await svc.api(null, 'GET', `/dev/mail/${crypto.randomUUID()}`);
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('not_found');
    const bad = await svc.api(null, 'GET', '/dev/mail?page=2');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('validation_failed');
  });

  it('is off in production, even when asked for', async () => {
    const cfg = loadConfig({ APP_ENV: 'production', DEV_MAIL_SINK: 'true', LOG_LEVEL: 'silent', MASTER_KEY: Buffer.alloc(32, 7).toString('base64') });
    expect(devMailSinkEnabled(cfg)).toBe(false);
    const prod = { ...svc.ctx, cfg } as AppContext;
    expect(await startDevMailSink(prod)).toBeNull();
    const app = await buildServer({ logger: svc.ctx.log, publicUrl: cfg.publicUrl, access: accessVerifiers(svc.ctx) });
    try {
      await registerRoutes(app, prod);
      const res = await app.inject({ method: 'GET', url: '/dev/mail' });
      expect(res.statusCode).toBe(404);
    } finally {
      await app.close();
    }
  });
});
