// The releaser (one leader for every project: probes open circuits, releases held messages) sends
// the owner's notice of an auto-disabled webhook through the project's own SMTP server. Found by
// review (2026-11-29): it awaited that notice, so a project whose SMTP server trickled its reply
// held every other project's probes and releases for as long as it liked. The notice is now sent
// beside the tick: here the victim's endpoint is probed and its held messages released while the
// attacker's notice still hangs. Time is compressed as in endpoint-disable.test.ts.
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { ScriptedReceiver } from '../helpers/scripted-receiver.js';

const HOST = '127.0.0.2';

describe('a project whose own SMTP server hangs holds no other project’s releases', () => {
  let svc: TestService;
  let attacker: TestProject;
  let victim: TestProject;
  let adb: pg.Client;
  let vdb: pg.Client;
  let workers: Worker[] = [];
  const rx = new ScriptedReceiver();
  const smtpSockets = new Set<net.Socket>();
  let smtp: net.Server;

  beforeAll(async () => {
    await rx.start(HOST);
    smtp = net.createServer((s) => {
      smtpSockets.add(s);
      s.on('error', () => {});
      s.on('close', () => smtpSockets.delete(s));
      s.write('220 slow.example ESMTP\r\n');
      s.once('data', () => {
        const t = setInterval(() => s.writable && s.write('250-thinking\r\n'), 5000);
        s.on('close', () => clearInterval(t));
      });
    });
    await new Promise<void>((r) => smtp.listen(0, HOST, r));
    svc = await startTestService({
      roles: ['api'],
      env: {
        OUTBOUND_ALLOW_CIDRS: `${HOST}/32`,
        RETRY_TIME_SCALE: '0.001',
        CIRCUIT_FAILURE_THRESHOLD: '2',
        CIRCUIT_COOLDOWN: '300ms',
        CIRCUIT_COOLDOWN_MAX: '600ms',
        ENDPOINT_DISABLE_AFTER: '4s',
        // long enough that the notice is still hanging when the victim recovers
        SMTP_TIMEOUT: '60s',
      },
    });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    attacker = await svc.project('pro');
    victim = await svc.project('pro');
    adb = new pg.Client({ connectionString: attacker.databaseUrl });
    vdb = new pg.Client({ connectionString: victim.databaseUrl });
    await adb.connect();
    await vdb.connect();
    await adb.query('create table public.a (id serial primary key)');
    await vdb.query('create table public.v (id serial primary key)');
  });
  afterAll(async () => {
    for (const s of smtpSockets) s.destroy();
    smtp.close();
    await Promise.all(workers.map((w) => w.stop()));
    await adb?.end();
    await vdb?.end();
    await svc?.stop();
    await rx.stop();
  });

  it("probes and releases the victim's recovered endpoint while the attacker's notice hangs", async () => {
    const port = (smtp.address() as net.AddressInfo).port;
    await svc.manage(attacker, 'PUT', '/smtp', { host: HOST, port, sender_email: 'a@attacker.example', tls_mode: 'none' });
    rx.script('/a', { status: 502 });
    const ah = (await svc.manage(attacker, 'POST', '/webhooks', { table: 'public.a', events: ['INSERT'], url: `${rx.url}/a` })).body;
    await adb.query('insert into public.a select from generate_series(1, 5)');
    await eventually(async () => (await svc.manage(attacker, 'GET', `/webhooks/${ah.id}`)).body.enabled === false, 60_000, "the attacker's webhook auto-disabled");
    await eventually(async () => smtpSockets.size > 0, 20_000, 'the notice connecting to the hostile SMTP host');

    // the victim's endpoint fails, its circuit opens, its messages are held
    rx.script('/v', { status: 503 });
    const vh = (await svc.manage(victim, 'POST', '/webhooks', { table: 'public.v', events: ['INSERT'], url: `${rx.url}/v` })).body;
    await vdb.query('insert into public.v select from generate_series(1, 10)');
    await eventually(async () => {
      const w = (await svc.manage(victim, 'GET', `/webhooks/${vh.id}`)).body;
      return w.circuit.state === 'open' && w.circuit.held_messages > 0 ? w : null;
    }, 60_000, "the victim's circuit open with held messages");
    // the victim's endpoint recovers: probed and released, the attacker's notice still hanging
    rx.script('/v', { status: 200 });
    const released = await eventually(async () => {
      const w = (await svc.manage(victim, 'GET', `/webhooks/${vh.id}`)).body;
      return w.circuit.state === 'closed' && w.circuit.held_messages === 0 ? w : null;
    }, 60_000, "the victim's circuit closed and its held messages released");
    expect(released.circuit.state).toBe('closed');
    // every one of the victim's rows delivered (released at CIRCUIT_RELEASE_RATE), the notice still hanging
    await eventually(
      async () => (await svc.ctx.db.query("select count(*)::int as n from deliveries where project_ref = $1 and status = 'delivered'", [victim.ref])).rows[0].n >= 10,
      60_000,
      "the victim's ten rows delivered",
    );
    expect(smtpSockets.size).toBeGreaterThan(0); // the notice has not finished
  }, 240_000);
});
