// An idle project's slot is not left to be invalidated by other databases' writes (idle-capture.ts,
// step 6), against the real stack: with its connector stopped and nothing written to its own
// database, a bulk write elsewhere on the cluster (here 64 MB into the admin database) makes its
// slot retain more than CAPTURE_IDLE_MAX_WAL, and the supervisor moves the stopped slot on at once
// (its periodic refresh is an hour away; a resumed connector would not move it, with no change in
// its own database), without resuming the connector; a row committed afterwards arrives.
// Without this, a 1,000,000-row backfill in one database lost all 100 idle projects' slots in the
// bench (max_slot_wal_keep_size 2 GB).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slotName } from '../../src/outbox/index.js';
import { eventually, sql, stack } from '../helpers/env.js';
import { startIdleCapture, type IdleCaptureFixture } from '../helpers/idle-capture.js';

describe('idle capture: WAL held by an idle slot', () => {
  let f: IdleCaptureFixture;
  const table = `wal_filler_${process.pid}`;

  beforeAll(async () => {
    f = await startIdleCapture({ CAPTURE_IDLE_AFTER: '3s', CAPTURE_IDLE_REFRESH: '1h', CAPTURE_IDLE_MAX_WAL: '32MB' });
  });

  afterAll(async () => {
    await sql(stack().adminDatabaseUrl, `drop table if exists ${table}`).catch(() => {});
    await f?.stop();
  });

  const retained = async () =>
    Number((await sql(f.project.databaseUrl, 'select pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::float8 as r from pg_replication_slots where slot_name = $1', [slotName(f.project.ref, f.svc.cfg.TOPIC_PREFIX)])).rows[0].r);

  it('resumes a stopped connector whose slot holds more than CAPTURE_IDLE_MAX_WAL, and loses nothing', async () => {
    await f.insert('before');
    await eventually(async () => f.notes().includes('before'), 60_000, 'the first row');
    // idle, and settled: the same stop for 6 s (a first stop may be followed by one more wake and stop)
    let stoppedAt = new Date(0);
    await eventually(async () => {
      const s = await f.supervised();
      if (s?.state !== 'idle') return false;
      const same = (s.stopped_at as Date).getTime() === stoppedAt.getTime();
      stoppedAt = s.stopped_at as Date;
      if (!same) await new Promise((r) => setTimeout(r, 6000));
      return same;
    }, 120_000, 'the project to stay idle');
    // another database of the cluster writes 64 MB of WAL; nothing is written to the project's
    await sql(stack().adminDatabaseUrl, `create table ${table} (x text)`);
    await sql(stack().adminDatabaseUrl, `insert into ${table} select repeat(md5(g::text), 32) from generate_series(1, 60000) g`);
    expect(await retained()).toBeGreaterThan(32 * 1024 * 1024);
    // the slot moves past the filler (no write of its own, the refresh an hour away), the
    // connector still stopped
    await eventually(async () => (await retained()) < 32 * 1024 * 1024, 30_000, 'the slot to advance');
    expect(await f.supervised()).toMatchObject({ state: 'idle', stopped_at: stoppedAt });
    expect(await f.connectState()).toBe('STOPPED');
    // nothing lost: a row committed now wakes it and arrives
    await f.insert('after');
    await eventually(async () => f.notes().includes('after'), 60_000, 'the row after');
  });

  // The advance runs in the background (IdleSlotAdvancer), so a wake never waits behind one: the
  // bench measured that (a hundred advances in a row had held the wakes 37 s at the median); this
  // is the safety of it. A row committed while the advance is peeking the slot wakes the project
  // and arrives, once, whether the advance was cancelled by the wake (a peek of 200 MB of others'
  // WAL is usually over before the wake check comes round, so this run does not force that path)
  // or had finished (the row is after the position it advanced to).
  it('wakes a project written to while its slot is being advanced, and loses nothing', async () => {
    await eventually(async () => (await f.supervised())?.state === 'idle', 120_000, 'the project to be idle again');
    await sql(stack().adminDatabaseUrl, `insert into ${table} select repeat(md5(g::text), 32) from generate_series(1, 200000) g`);
    const peek = `select pid from pg_stat_activity where application_name = 'integrations:supervisor' and datname = current_database() and state = 'active' and query like '%pg_logical_slot_peek_binary_changes%'`;
    // caught while it peeks (200,000 rows of filler take it a while to decode)
    const pid = await eventually(async () => (await sql(f.project.databaseUrl, peek)).rows[0]?.pid as number | undefined, 60_000, 'the advance to be peeking the slot');
    await f.insert('during the advance');
    await eventually(async () => (await f.supervised())?.state === 'running', 30_000, 'the connector to be resumed');
    await eventually(async () => f.notes().includes('during the advance'), 60_000, 'the row written during the advance');
    expect(f.notes().filter((n) => n === 'during the advance')).toHaveLength(1);
    expect(await f.connectState()).toBe('RUNNING');
    // the peek is gone (cancelled, or done), not left holding the slot
    expect((await sql(f.project.databaseUrl, 'select 1 from pg_stat_activity where pid = $1 and state = $2', [pid, 'active'])).rowCount).toBe(0);
  });
});
