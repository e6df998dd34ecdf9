// Idle projects cost nothing, and lose nothing: against the real stack, the supervisor stops the
// connector of a project with no message for CAPTURE_IDLE_AFTER (no task, no walsender), a write
// to its database wakes it and the row arrives; a row committed while the connector was being
// stopped is found in the slot and resumes it at once; the periodic refresh resumes a stopped
// connector with no write at all (idle-refresh.test.ts). Wakes run beside the supervisor's checks,
// not behind them: a wake lands while a check is held, and a check holding a stale row neither
// writes it back over the wake nor stops the connector the wake resumed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { stopIdleConnector } from '../../src/outbox/idle-capture.js';
import { LOCK_KEY } from '../../src/outbox/supervisor.js';
import { dbUrl, eventually, sql, stack } from '../helpers/env.js';
import { startIdleCapture, type IdleCaptureFixture } from '../helpers/idle-capture.js';

describe('idle capture', () => {
  let f: IdleCaptureFixture;

  beforeAll(async () => {
    f = await startIdleCapture({ CAPTURE_IDLE_AFTER: '4s', CAPTURE_IDLE_REFRESH: '1h' });
  });

  afterAll(async () => {
    await f?.stop();
  });

  it('stops the connector of an idle project; /health (the detailed report) stays ok; a write wakes it and the row arrives', async () => {
    await eventually(async () => (await f.supervised())?.state === 'idle', 60_000, 'the idle project to be stopped');
    expect(await f.connectState()).toBe('STOPPED');
    expect(await f.walsender()).toBe(false); // no replication connection while idle
    // stopped slow, it resumes slow (capture-speed.ts): no task restart for its speed at the wake
    const config = (await (await fetch(`${stack().connectUrl}/connectors/${f.connector}/config`)).json()) as Record<string, string>;
    expect(config['poll.interval.ms']).toBe(String(f.svc.cfg.CAPTURE_SLOW_POLL));
    const health = await f.svc.detailedHealth();
    expect(health.status, JSON.stringify(health.body)).toBe(200);
    expect(health.body.checks.connectors[f.project.ref]).toMatchObject({ ok: true, state: 'idle' });

    const t0 = Date.now();
    const woken = f.connectCalls.length; // what the service asks of Connect from the wake on
    await f.insert('wakes it');
    await eventually(async () => f.notes().includes('wakes it'), 60_000, 'the row committed while the connector was stopped');
    // resumed as it was stopped: no config written, so no task restarted, for the wake
    expect(f.connectCalls.slice(woken).filter((c) => c.op !== 'resume')).toEqual([]);
    expect(f.connectCalls.slice(woken).length).toBeGreaterThan(0);
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

  it('a message under a prefix not the project’s does not count as uncaptured: the stop goes ahead', async () => {
    // any role may emit a logical decoding message under any prefix; one that only looks like an
    // outbox prefix is skipped by the connector (message.prefix.include.list names the project's),
    // so it must not keep the project running (nor resume it) for nothing
    const release = await f.holdSupervision();
    await fetch(`${stack().connectUrl}/connectors/${f.connector}/stop`, { method: 'PUT' });
    await eventually(async () => (await f.walsender()) === false, 30_000, 'the slot without reader');
    const own = (await sql(f.project.databaseUrl, 'select message_prefix from base.capture')).rows[0].message_prefix as string;
    expect(own).toMatch(/^base_outbox_[0-9a-f]{32}$/); // armed: the webhook trigger writes messages
    const other = `base_outbox_${'0'.repeat(32)}`;
    await sql(f.project.databaseUrl, `select pg_logical_emit_message(true, $1, '{"id":"not read"}')`, [other]);
    await sql(f.project.databaseUrl, `select pg_logical_emit_message(true, $1, 'not read either')`, [own.slice(0, -1)]);
    const r = await stopIdleConnector(f.svc.ctx, f.project.ref, f.connector);
    await release();
    expect(r).toMatchObject({ stopped: true });
  });

  it('writes are the wake signal, whichever table: nothing is stuck after many stop/wake rounds', async () => {
    for (let i = 0; i < 3; i++) {
      await eventually(async () => (await f.supervised())?.state === 'idle', 60_000, `idle again (round ${i})`);
      await f.insert(`round ${i}`);
      await eventually(async () => f.notes().includes(`round ${i}`), 60_000, `round ${i} delivered`);
    }
    expect(f.notes().filter((n) => n.startsWith('round'))).toHaveLength(3);
  });

  // the control database, where the tests below hold what a check waits for
  async function control(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: dbUrl(f.svc.controlDb) });
    c.on('error', () => {});
    await c.connect();
    return c;
  }
  // whether a session waits for a lock in this statement (`holder`: the session holding the
  // supervisor's advisory lock, which writes its heartbeat); asked on a connection of its own each
  // time, as in a transaction pg_stat_activity is a snapshot
  const waitingOn = async (statement: string, holder = false) =>
    (
      await sql(
        dbUrl(f.svc.controlDb),
        `select 1 from pg_stat_activity a
          where a.wait_event_type = 'Lock' and a.datname = current_database() and a.query like $1
            and (not $2 or exists (select 1 from pg_locks l where l.pid = a.pid and l.locktype = 'advisory' and l.objid = $3 and l.granted))`,
        [`${statement}%`, holder, LOCK_KEY],
      )
    ).rowCount! > 0;

  it('a wake does not wait for a check in progress: with a check held at its first statement, a write resumes the connector', async () => {
    await eventually(async () => (await f.supervised())?.state === 'idle', 60_000, 'the idle project to be stopped');
    const c = await control();
    try {
      // a check begins by writing its heartbeat (connector_supervisor); the wake never touches it
      await c.query('begin');
      await c.query('lock table connector_supervisor in exclusive mode');
      await eventually(() => waitingOn('insert into connector_supervisor ', true), 30_000, 'a check held at its first statement');
      await f.insert('beside a held check');
      await eventually(async () => (await f.supervised()).state === 'running', 30_000, 'the wake, while the check is held');
      expect(await waitingOn('insert into connector_supervisor ', true)).toBe(true); // still held: the wake did not wait for it
    } finally {
      await c.query('rollback').catch(() => undefined);
      await c.end();
    }
    await eventually(async () => f.notes().includes('beside a held check'), 60_000, 'the row that woke it');
  });

  it('a check that read a project idle does not write that back over a wake that resumed it meanwhile', async () => {
    await eventually(async () => (await f.supervised())?.state === 'idle', 60_000, 'the idle project to be stopped');
    const c = await control();
    const ref = f.project.ref;
    // every write of the project's row, in order (dropped below)
    await c.query(`create table test_supervision_writes (n bigserial primary key, state text)`);
    await c.query(`create function test_supervision_write() returns trigger language plpgsql as $$ begin insert into test_supervision_writes (state) values (new.state); return new; end $$`);
    await c.query(`create trigger test_supervision_write after update on connector_supervision for each row when (new.project_ref = '${ref}') execute function test_supervision_write()`);
    try {
      // the row locked: the next check that writes it (it reads the slot every few checks, and
      // records what it read) has read it idle and waits
      await c.query('begin');
      await c.query('select 1 from connector_supervision where project_ref = $1 for update', [ref]);
      await eventually(() => waitingOn('insert into connector_supervision as s'), 60_000, 'a check writing the idle row, held');
      // meanwhile a wake resumes the project, and records it (what wakeIdleProjects writes)
      await c.query(`update connector_supervision set state = 'running', stopped_at = null, resumed_at = now() where project_ref = $1 and state = 'idle'`, [ref]);
      const mark = Number((await c.query('select max(n) as n from test_supervision_writes')).rows[0].n);
      await c.query('commit');
      // the held check goes on: it must not record the project idle again; the next check finds
      // the connector stopped under a running row and resumes it
      const next = await eventually(async () => (await c.query('select state from test_supervision_writes where n > $1 order by n limit 1', [mark])).rows[0], 30_000, 'the next write of the row');
      expect(next.state).toBe('running');
      await eventually(async () => (await f.connectState()) === 'RUNNING', 30_000, 'the connector resumed');
    } finally {
      await c.query('rollback').catch(() => undefined);
      await c.query('drop trigger if exists test_supervision_write on connector_supervision');
      await c.query('drop function if exists test_supervision_write()');
      await c.query('drop table if exists test_supervision_writes');
      await c.end();
    }
    await f.insert('after the held check');
    await eventually(async () => f.notes().includes('after the held check'), 60_000, 'a row after it');
  });

  it('a connector found running under an idle row (a wake that died before recording it) counts as resumed now, not stopped again at once', async () => {
    await eventually(async () => (await f.supervised())?.state === 'idle', 60_000, 'the idle project to be stopped');
    const release = await f.holdSupervision();
    // the wake's first half: Connect resumes the connector; its record never comes
    await fetch(`${stack().connectUrl}/connectors/${f.connector}/resume`, { method: 'PUT' });
    await eventually(async () => (await f.connectState()) === 'RUNNING', 30_000, 'the connector resumed by hand');
    const released = new Date();
    await release();
    // judged by the stale row, it would have been idle for long and stopped again (resumed_at kept)
    await eventually(async () => ((await f.supervised()).resumed_at?.getTime() ?? 0) >= released.getTime(), 30_000, 'the supervisor to count it as resumed');
    await f.insert('after the lost record');
    await eventually(async () => f.notes().includes('after the lost record'), 60_000, 'a row after it');
  });
});
