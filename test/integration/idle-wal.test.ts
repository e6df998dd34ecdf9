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

  // The advance runs in the background (IdleSlotAdvancer), so a wake never waits behind one. Run O
  // of the bench had a hundred advances done one after another inside the wake check, and the
  // projects written to meanwhile waited 37 s at the median. Here an advance is held in progress
  // (its read of the connector's offsets from Connect is made to wait: the only stand-in in this
  // file; database, slot and connector are real) while the project is written to: the project must
  // be resumed, and its row arrive once, before the advance is let go. Done inside the wake check,
  // as before, the resume would wait for the advance and this test times out.
  it('wakes a project written to while its slot is being advanced, without waiting for the advance, and loses nothing', async () => {
    await eventually(async () => (await f.supervised())?.state === 'idle', 120_000, 'the project to be idle again');
    const connect = f.svc.ctx.connect;
    const real = connect.processedPosition.bind(connect);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let advancing = false;
    connect.processedPosition = async (name: string) => {
      advancing = true;
      await held;
      return real(name);
    };
    try {
      await sql(stack().adminDatabaseUrl, `create table if not exists ${table} (x text)`);
      await sql(stack().adminDatabaseUrl, `insert into ${table} select repeat(md5(g::text), 32) from generate_series(1, 60000) g`);
      await eventually(async () => advancing, 30_000, 'an advance of the slot to start');
      await f.insert('during the advance');
      await eventually(async () => (await f.supervised())?.state === 'running', 30_000, 'the connector to be resumed while the advance is held');
      await eventually(async () => f.notes().includes('during the advance'), 60_000, 'the row written during the advance');
    } finally {
      connect.processedPosition = real;
      release();
    }
    expect(f.notes().filter((n) => n === 'during the advance')).toHaveLength(1);
    expect(await f.connectState()).toBe('RUNNING');
  });
});
