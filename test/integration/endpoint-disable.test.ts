// Auto-disable on the real pipeline: a webhook whose endpoint fails every probe for
// ENDPOINT_DISABLE_AFTER (4 s here) is disabled, its owner gets an email through the real SMTP
// path, changes made meanwhile end dead without a request, and enabling it again offers the bulk
// replay of what arrived while it was disabled, which then delivers them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { readTopic } from '../helpers/delivery-tools.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { ScriptedReceiver } from '../helpers/scripted-receiver.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp-server.js';

describe('endpoint protection: a webhook that keeps failing is disabled, its owner told, and its backlog replayable', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  let smtp: TestSmtpServer;
  const receiver = new ScriptedReceiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    smtp = await startSmtpServer();
    svc = await startTestService({
      roles: ['api'],
      env: {
        OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32',
        RETRY_TIME_SCALE: '0.001',
        CIRCUIT_FAILURE_THRESHOLD: '2',
        CIRCUIT_COOLDOWN: '300ms',
        CIRCUIT_COOLDOWN_MAX: '600ms',
        ENDPOINT_DISABLE_AFTER: '4s',
        SMTP_URL: smtp.url,
        SMTP_FROM: 'Platform <no-reply@platform.test>',
      },
    });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('pro');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query('create table public.orders (id serial primary key, name text)');
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
    await smtp?.close();
  });

  /** The distinct dead-reason headers of these messages' dead letters. */
  const deadReasons = async (ids: string[]) => {
    const letters = await eventually(async () => {
      // by the id header: a webhook with ordering "row" keys its records by row, not by message id
      const idOf = (m: { headers?: Record<string, unknown> }) => String(m.headers?.id ?? '');
      const ls = (await readTopic(svc, svc.ctx.topics.dead)).filter((m) => ids.includes(idOf(m)));
      return new Set(ls.map(idOf)).size === ids.length ? ls : null;
    }, 30_000, 'their dead letters');
    return [...new Set(letters.map((m) => m.headers?.['dead-reason']?.toString()))];
  };

  const call = async (method: string, path: string, body?: unknown) => (await svc.manage(project, method, path, body)).body;
  const audit = async (action: string) => ((await call('GET', '/audit?limit=100')) as any[]).filter((e) => e.action === action);

  it('disables, emails the owner, ends new changes dead unsent, and replays them once enabled again', async () => {
    receiver.script('/orders', { status: 502 });
    const hook = await call('POST', '/webhooks', { name: 'orders-sync', table: 'public.orders', events: ['INSERT'], url: `${receiver.url}/orders` });
    await db.query(`insert into public.orders (name) select 'early ' || g from generate_series(1, 5) g`);

    const disabled = await eventually(async () => {
      const w = await call('GET', `/webhooks/${hook.id}`);
      return w.enabled === false ? w : null;
    }, 60_000, 'the webhook to be disabled');
    expect(disabled).toMatchObject({ disabled_reason: 'failing' });
    expect(disabled.disabled_at).not.toBeNull();
    expect(Date.parse(disabled.disabled_failing_since)).toBeLessThan(Date.parse(disabled.disabled_at));

    const [entry] = await audit('webhook.auto_disable');
    expect(entry).toMatchObject({ resource_id: hook.id, actor: { operator: expect.stringContaining('service') } });
    expect(entry.details.last_error).toBe('HTTP 502');
    const notice = await eventually(async () => (await audit('webhook.disable_notice'))[0], 10_000, 'the notice audit entry');
    expect(notice.details).toMatchObject({ sent: true, to: `${project.ref}@owners.test` });
    const mail = smtp.received.find((m) => m.envelopeTo.includes(`${project.ref}@owners.test`));
    expect(mail?.subject).toContain('"orders-sync" disabled');
    expect(mail?.text).toContain('HTTP 502');
    expect(mail?.text).toContain(`/dashboard/#/p/${project.ref}/webhooks`);

    // disabled by the service, the trigger stays: new changes are recorded and end dead, unsent
    const hits = receiver.to('/orders').length;
    const t0 = Date.now() - 50;
    const ids = (await db.query(`insert into public.orders (name) select 'while disabled ' || g from generate_series(1, 3) g returning id`)).rows.length;
    expect(ids).toBe(3);
    const whileDisabled = await eventually(async () => {
      const ds = (await call('GET', `/outbox/deliveries?webhook_id=${hook.id}&status=dead&limit=100`)).deliveries as any[];
      const late = ds.filter((d) => d.last_error === 'webhook disabled' && Date.parse(d.created_at) >= t0);
      return late.length === 3 ? late : null;
    }, 30_000, 'the changes made while disabled to end dead');
    expect(whileDisabled.every((d) => d.attempts === 1)).toBe(true);
    expect(receiver.to('/orders').length).toBe(hits);
    // filed on the dead topic as what they are, not as 'permanent' failures an operator would replay
    expect(await deadReasons(whileDisabled.map((d) => d.id))).toEqual(['webhook_disabled']);
    // the early messages held when it was disabled ended the same way, and are in the offer
    const endedByDisable = ((await call('GET', `/outbox/deliveries?webhook_id=${hook.id}&status=dead&limit=100`)).deliveries as any[]).filter((d) => d.last_error === 'webhook disabled');
    expect(endedByDisable.length).toBeGreaterThan(3);
    const offered = (await call('GET', `/webhooks/${hook.id}`)).replay_offer;
    expect(offered.deliveries).toBeGreaterThanOrEqual(3);

    // the endpoint is back; the owner enables the webhook and takes the offer
    receiver.script('/orders', { status: 200 });
    const enabled = await call('PATCH', `/webhooks/${hook.id}`, { enabled: true });
    expect(enabled).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null, disabled_failing_since: null });
    expect(enabled.circuit.state).toBe('closed');
    expect(enabled.replay_offer.request).toMatchObject({ status: 'dead', webhook_id: hook.id });
    const replay = await call('POST', '/outbox/replay', enabled.replay_offer.request);
    // the offer counts what it matched when it was made; later arrivals of the projection add to it
    expect(replay.replayed).toBeGreaterThanOrEqual(enabled.replay_offer.deliveries);
    expect(replay.not_found).toBe(0);
    await eventually(async () => {
      const ds = (await call('GET', `/outbox/deliveries?webhook_id=${hook.id}&limit=100`)).deliveries as any[];
      return endedByDisable.every((x) => ds.find((d) => d.id === x.id)?.status === 'delivered');
    }, 60_000, 'the replayed deliveries to be delivered').catch(async (err) => {
      // what was left, for the log of a failed run
      const ds = (await call('GET', `/outbox/deliveries?webhook_id=${hook.id}&limit=100`)).deliveries as any[];
      const q = async (sql: string) => JSON.stringify((await svc.ctx.db.query(sql)).rows);
      console.log('DIAG deliveries', JSON.stringify(ds.map((d) => [d.id, d.status, d.run, d.attempts, d.last_error])));
      console.log('DIAG health', await q('select * from endpoint_health'), 'held', await q('select message_id, run, attempt, reason from held_messages'));
      console.log('DIAG ledger', await q('select message_id, run, attempt, outcome, final from delivery_ledger order by recorded_at'));
      throw err;
    });
    const bodies = receiver.to('/orders').slice(hits).map((h) => JSON.parse(h.body).record.name);
    for (const n of [1, 2, 3]) expect(bodies).toContain(`while disabled ${n}`);
    // no longer disabled: no offer
    expect((await call('GET', `/webhooks/${hook.id}`)).replay_offer).toBeUndefined();
  });

  it('gives up on a target host that fails every probe: its held messages end dead without a request', async () => {
    receiver.script('/api', { status: 503 });
    const key = `host:${new URL(receiver.url).host}`;
    const ids: string[] = (
      await db.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"n":1}'::jsonb) as id from generate_series(1, 4)`, [`${receiver.url}/api`])
    ).rows.map((r) => r.id);
    // opened, then held; after ENDPOINT_DISABLE_AFTER (4 s) of failed probes the host is given up on
    const entry = await eventually(async () => (await audit('endpoint.give_up')).find((e) => e.resource_id === key), 60_000, 'the host to be given up on');
    expect(entry.details).toMatchObject({ endpoint: key, last_error: 'HTTP 503' });
    // the host answers again, so a retry still on the ladder is delivered rather than failing twice
    // more and opening a fresh circuit (threshold 2)
    receiver.script('/api', { status: 200 });
    const answering = Date.now();
    expect(entry.details.held_messages_ended).toBeGreaterThanOrEqual(1);
    const ended = await eventually(async () => {
      const ds = await Promise.all(ids.map((id) => call('GET', `/outbox/deliveries/${id}`)));
      const given = ds.filter((d) => d.status === 'dead' && String(d.last_error).startsWith('not attempted: the endpoint failed every probe'));
      return given.length === entry.details.held_messages_ended ? given : null;
    }, 30_000, 'the held messages to end dead');
    expect(ended.length).toBeGreaterThanOrEqual(1);
    // ending them made no request (the ending attempt has no HTTP status), and the host's circuit
    // starts afresh (a retry still on the ladder is then attempted as usual)
    expect(ended.every((d) => d.last_http_status === null)).toBe(true);
    expect(await deadReasons(ended.map((d) => d.id))).toEqual(['given_up']);
    // Unless two retries failed in the moment between the give-up and the host answering again
    // (threshold 2: they may open a fresh circuit, whose failures begin after the give-up), no
    // circuit of the host is open at all; in every case the old one is not kept.
    const givenUpAt = Date.parse(entry.created_at);
    const failedSince = receiver.to('/api').filter((h) => h.at >= givenUpAt && h.at < answering).length;
    const open = ((await call('GET', '/outbox/endpoints')) as any[]).filter((e) => e.endpoint === key && e.state !== 'closed');
    if (failedSince < 2) expect(open).toEqual([]);
    expect(open.filter((e) => !(Date.parse(e.failing_since) > givenUpAt))).toEqual([]);
  });
});
