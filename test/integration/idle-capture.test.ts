// Idle projects cost nothing, and lose nothing: against the real stack, the supervisor stops the
// connector of a project with no message for CAPTURE_IDLE_AFTER (no task, no walsender), a write
// to its database wakes it and the row arrives; a row committed while the connector was being
// stopped is found in the slot and resumes it at once; the periodic refresh resumes a stopped
// connector with no write at all (idle-refresh.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { stopIdleConnector } from '../../src/outbox/idle-capture.js';
import { eventually, sql, stack } from '../helpers/env.js';
import { startIdleCapture, type IdleCaptureFixture } from '../helpers/idle-capture.js';

describe('idle capture', () => {
  let f: IdleCaptureFixture;

  beforeAll(async () => {
    f = await startIdleCapture({ CAPTURE_IDLE_AFTER: '4s', CAPTURE_IDLE_REFRESH: '1h' });
  });

  afterAll(async () => {
    await f?.stop();
  });

  it('stops the connector of an idle project; /health stays ok; a write wakes it and the row arrives', async () => {
    await eventually(async () => (await f.supervised())?.state === 'idle', 60_000, 'the idle project to be stopped');
    expect(await f.connectState()).toBe('STOPPED');
    expect(await f.walsender()).toBe(false); // no replication connection while idle
    // stopped slow, it resumes slow (capture-speed.ts): no task restart for its speed at the wake
    const config = (await (await fetch(`${stack().connectUrl}/connectors/${f.connector}/config`)).json()) as Record<string, string>;
    expect(config['poll.interval.ms']).toBe(String(f.svc.cfg.CAPTURE_SLOW_POLL));
    const health = await f.svc.api(null, 'GET', '/health');
    expect(health.status, JSON.stringify(health.body)).toBe(200);
    expect(health.body.checks.connectors[f.project.ref]).toMatchObject({ ok: true, state: 'idle' });

    const t0 = Date.now();
    await f.insert('wakes it');
    await eventually(async () => f.notes().includes('wakes it'), 60_000, 'the row committed while the connector was stopped');
    console.log(`[idle-capture] commit -> receipt after an idle period: ${Date.now() - t0} ms`);
    expect(await f.connectState()).toBe('RUNNING');
    expect((await f.supervised()).resumed_at).not.toBeNull();
  });

  it('a write through a connection that stays open wakes it: the counters are published at commit, not up to 10 s later', async () => {
    // an application's pooled connection: it read a table a moment ago, so PostgreSQL published its
    // counters then and would hold the next ones back until it has been idle 10 s (PGSTAT_IDLE_INTERVAL)
    const app = new pg.Client({ connectionString: f.project.databaseUrl });
    await app.connect();
    try {
      await eventually(async () => (await f.supervised())?.state === 'idle', 60_000, 'the idle project to be stopped');
      expect((await sql(f.project.databaseUrl, 'select idle from base.capture')).rows[0].idle).toBe(true);
      const writes = async () => Number((await sql(f.project.databaseUrl, 'select (tup_inserted + tup_updated + tup_deleted)::float8 as n from pg_stat_database where datname = current_database()')).rows[0].n);
      await app.query('select count(*) from public.crates');
      const before = await writes();
      await app.query('insert into public.crates (note) values ($1)', ['through an open connection']);
      // the backend publishes before it answers: no wait, no timing, the counters moved already
      expect(await writes()).toBeGreaterThan(before);
      await eventually(async () => f.notes().includes('through an open connection'), 60_000, 'the row written through the open connection');
      expect(f.svc.ctx.cfg.CAPTURE_IDLE_REFRESH).toBeGreaterThanOrEqual(3_600_000); // the refresh could not have done it
      // running again: the database no longer publishes per message
      await eventually(async () => (await sql(f.project.databaseUrl, 'select idle from base.capture')).rows[0].idle === false, 30_000, 'base.capture.idle cleared');
    } finally {
      await app.end();
    }
  });

  it('a row committed while the connector stops, before it was captured, resumes it at once (the slot is peeked)', async () => {
    // the connector stops with a row uncaptured: stopped first by hand, the row committed, then the
    // supervisor's stop procedure runs (its stop is idempotent) and must find the row in the slot.
    // The service's supervisor is kept out meanwhile: it would resume a connector it did not stop
    // (or wake it at the write), and the row would be captured before the procedure looks.
    const release = await f.holdSupervision();
    await fetch(`${stack().connectUrl}/connectors/${f.connector}/stop`, { method: 'PUT' });
    await eventually(async () => (await f.walsender()) === false, 30_000, 'the slot without reader');
    await f.insert('committed during the stop');
    const r = await stopIdleConnector(f.svc.ctx, f.project.ref, f.connector);
    await release();
    expect(r).toMatchObject({ stopped: false, reason: expect.stringContaining('not captured yet') });
    await eventually(async () => f.notes().includes('committed during the stop'), 60_000, 'the row found in the slot');
  });

  it('writes are the wake signal, whichever table: nothing is stuck after many stop/wake rounds', async () => {
    for (let i = 0; i < 3; i++) {
      await eventually(async () => (await f.supervised())?.state === 'idle', 60_000, `idle again (round ${i})`);
      await f.insert(`round ${i}`);
      await eventually(async () => f.notes().includes(`round ${i}`), 60_000, `round ${i} delivered`);
    }
    expect(f.notes().filter((n) => n.startsWith('round'))).toHaveLength(3);
  });
});
