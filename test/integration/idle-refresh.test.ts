// The periodic refresh of an idle project's connector (CAPTURE_IDLE_REFRESH), against the real
// stack: with no write at all, a stopped connector is resumed, runs for CAPTURE_REFRESH_RUN (not a
// whole CAPTURE_IDLE_AFTER) and is stopped again; a row committed afterwards still arrives.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

describe('idle capture: the periodic refresh', () => {
  let svc: TestService;
  let project: TestProject;
  const receiver = new Receiver();
  const connector = () => `outbox.${svc.cfg.TOPIC_PREFIX}.${project.ref}`;
  const connectState = async () => ((await (await fetch(`${stack().connectUrl}/connectors/${connector()}/status`)).json()) as { connector: { state: string } }).connector.state;
  const supervised = async () => (await svc.ctx.db.query('select state, stopped_at, resumed_at from connector_supervision where project_ref = $1', [project.ref])).rows[0];

  beforeAll(async () => {
    await receiver.start();
    svc = await startTestService({
      roles: ['api', 'dispatcher', 'projector'],
      // a refresh 3 s after each stop, running 1 s; CAPTURE_IDLE_AFTER long enough to tell them apart
      env: { CONNECTOR_SUPERVISE_INTERVAL: '1s', CAPTURE_IDLE_AFTER: '30s', CAPTURE_WAKE_INTERVAL: '500ms', CAPTURE_IDLE_REFRESH: '3s', CAPTURE_REFRESH_RUN: '1s' },
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

  it('resumes a stopped connector with no write, stops it again after CAPTURE_REFRESH_RUN, and loses nothing', async () => {
    await eventually(async () => (await supervised())?.state === 'idle', 90_000, 'the idle project to be stopped');
    const first = (await supervised()).stopped_at as Date;
    // the refresh resumes it, then it is stopped again: a later stop, well before CAPTURE_IDLE_AFTER
    let seenRunning = false;
    await eventually(
      async () => {
        const s = await supervised();
        if (s.state === 'running') seenRunning = true;
        return s.state === 'idle' && (s.stopped_at as Date).getTime() > first.getTime();
      },
      25_000,
      'stopped again after its refresh',
    );
    const second = (await supervised()).stopped_at as Date;
    const gap = second.getTime() - first.getTime();
    console.log(`[idle-refresh] stopped -> refreshed -> stopped again in ${gap} ms (CAPTURE_IDLE_AFTER 30 s)`);
    expect(gap).toBeLessThan(20_000);
    expect(seenRunning || gap > 3_000).toBe(true);
    expect(await connectState()).toBe('STOPPED');

    // nothing is stuck: a row committed now wakes it and arrives
    await sql(project.databaseUrl, 'insert into public.crates (note) values ($1)', ['after a refresh']);
    await eventually(async () => receiver.requests.some((r) => JSON.parse(r.body).record.note === 'after a refresh'), 60_000, 'the row committed after the refresh');
  });
});
