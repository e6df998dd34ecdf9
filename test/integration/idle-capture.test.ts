// Idle projects cost nothing, and lose nothing: against the real stack, the supervisor stops the
// connector of a project with no message for CAPTURE_IDLE_AFTER (no task, no walsender), a write
// to its database wakes it and the row arrives; a row committed while the connector was being
// stopped is found in the slot and resumes it at once; the periodic refresh resumes a stopped
// connector with no write at all.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slotName } from '../../src/outbox/index.js';
import { stopIdleConnector } from '../../src/outbox/idle-capture.js';
import { eventually, stack } from '../helpers/env.js';
import { Receiver } from '../helpers/receiver.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

async function sql(url: string, text: string, params: unknown[] = []) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text, params);
  } finally {
    await c.end();
  }
}

describe('idle capture', () => {
  let svc: TestService;
  let project: TestProject;
  const receiver = new Receiver();
  const connector = () => `outbox.${svc.cfg.TOPIC_PREFIX}.${project.ref}`;
  const connectState = async () => ((await (await fetch(`${stack().connectUrl}/connectors/${connector()}/status`)).json()) as { connector: { state: string } }).connector.state;
  const supervised = async () => (await svc.ctx.db.query('select state, stopped_at, resumed_at from connector_supervision where project_ref = $1', [project.ref])).rows[0];
  const notes = () => receiver.requests.map((r) => JSON.parse(r.body).record.note as string);
  const insert = (note: string) => sql(project.databaseUrl, 'insert into public.crates (note) values ($1)', [note]);
  const walsender = async () => (await sql(project.databaseUrl, 'select active from pg_replication_slots where slot_name = $1', [slotName(project.ref, svc.cfg.TOPIC_PREFIX)])).rows[0]?.active;

  beforeAll(async () => {
    await receiver.start();
    svc = await startTestService({
      roles: ['api', 'dispatcher', 'projector'],
      env: { CONNECTOR_SUPERVISE_INTERVAL: '1s', CAPTURE_IDLE_AFTER: '4s', CAPTURE_WAKE_INTERVAL: '500ms', CAPTURE_IDLE_REFRESH: '1h' },
    });
    project = await svc.project('enterprise');
    await sql(project.databaseUrl, 'create table public.crates (id bigserial primary key, note text)');
    const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/webhooks`, { table: 'public.crates', events: ['INSERT'], url: `${receiver.url}/hook` });
    expect(r.status).toBe(201);
  });

  afterAll(async () => {
    await svc?.stop();
    await receiver.stop();
  });

  it('stops the connector of an idle project; /health stays ok; a write wakes it and the row arrives', async () => {
    await eventually(async () => (await supervised())?.state === 'idle', 60_000, 'the idle project to be stopped');
    expect(await connectState()).toBe('STOPPED');
    expect(await walsender()).toBe(false); // no replication connection while idle
    const health = await svc.api(null, 'GET', '/health');
    expect(health.status, JSON.stringify(health.body)).toBe(200);
    expect(health.body.checks.connectors[project.ref]).toMatchObject({ ok: true, state: 'idle' });

    const t0 = Date.now();
    await insert('wakes it');
    await eventually(async () => notes().includes('wakes it'), 60_000, 'the row committed while the connector was stopped');
    console.log(`[idle-capture] commit -> receipt after an idle period: ${Date.now() - t0} ms`);
    expect(await connectState()).toBe('RUNNING');
    expect((await supervised()).resumed_at).not.toBeNull();
  });

  it('a row committed while the connector stops, before it was captured, resumes it at once (the slot is peeked)', async () => {
    // the connector stops with a row uncaptured: stopped first by hand, the row committed, then the
    // supervisor's stop procedure runs (its stop is idempotent) and must find the row in the slot
    await fetch(`${stack().connectUrl}/connectors/${connector()}/stop`, { method: 'PUT' });
    await eventually(async () => (await walsender()) === false, 30_000, 'the slot without reader');
    await insert('committed during the stop');
    const r = await stopIdleConnector(svc.ctx, project.ref, connector());
    expect(r).toMatchObject({ stopped: false, reason: expect.stringContaining('not captured yet') });
    await eventually(async () => notes().includes('committed during the stop'), 60_000, 'the row found in the slot');
  });

  it('writes are the wake signal, whichever table: nothing is stuck after many stop/wake rounds', async () => {
    for (let i = 0; i < 3; i++) {
      await eventually(async () => (await supervised())?.state === 'idle', 60_000, `idle again (round ${i})`);
      await insert(`round ${i}`);
      await eventually(async () => notes().includes(`round ${i}`), 60_000, `round ${i} delivered`);
    }
    expect(notes().filter((n) => n.startsWith('round'))).toHaveLength(3);
  });
});
