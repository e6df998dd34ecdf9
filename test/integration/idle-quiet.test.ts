// Step 7 of idle capture (quiet-cluster.ts), against the real stack: while the cluster is quiet, an
// idle project's slot is advanced as soon as it holds CAPTURE_IDLE_QUIET_WAL more than after its
// last advance, long before CAPTURE_IDLE_MAX_WAL (here 1 GB, so step 6 never acts), so its next
// wake has almost nothing to decode; while the cluster is busy it is left alone (each advance
// decodes what it holds, and a busy cluster is step 6's). Nothing is lost either way.
//
// It runs in `npm run test:crash` (one file at a time, a stack of its own), not in `npm test`: it
// needs the cluster quiet, and beside other files it never was (CI: over 16 MB in every 30 s), and
// its open transaction held up every slot created beside it. "Quiet" is set at 16 MB in 30 s here
// (the default is 1 MB), above what the service's own writes and a stack's background add.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idleSlotAdvances } from '../../src/lib/metrics.js';
import { slotName } from '../../src/outbox/index.js';
import { eventually, sql, stack } from '../helpers/env.js';
import { startIdleCapture, type IdleCaptureFixture } from '../helpers/idle-capture.js';

const MB = 1024 * 1024;
const QUIET = 16 * MB;

describe('idle capture: a quiet cluster empties its idle slots', () => {
  let f: IdleCaptureFixture;
  const table = `quiet_filler_${process.pid}`;

  beforeAll(async () => {
    f = await startIdleCapture({ CAPTURE_IDLE_AFTER: '3s', CAPTURE_IDLE_REFRESH: '1h', CAPTURE_IDLE_MAX_WAL: '1GB', CAPTURE_IDLE_QUIET_WAL: '16MB' });
    await sql(stack().adminDatabaseUrl, `create table ${table} (x text)`);
  });

  afterAll(async () => {
    await sql(stack().adminDatabaseUrl, `drop table if exists ${table}`).catch(() => {});
    await f?.stop();
  });

  const retained = async () =>
    Number((await sql(f.project.databaseUrl, 'select pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::float8 as r from pg_replication_slots where slot_name = $1', [slotName(f.project.ref, f.svc.cfg.TOPIC_PREFIX)])).rows[0].r);
  const advances = async () => (await idleSlotAdvances.get()).values.reduce((n, v) => n + v.value, 0);
  /** about `mb` MB of WAL in another database of the cluster (1 kB rows) */
  const fill = (mb: number) => sql(stack().adminDatabaseUrl, `insert into ${table} select repeat(md5(g::text), 32) from generate_series(1, $1) g`, [mb * 900]);

  it('advances an idle slot once the cluster is quiet, leaves it alone while the cluster writes, and never resumes the connector for it', async () => {
    await f.insert('before');
    await eventually(async () => f.notes().includes('before'), 60_000, 'the first row');
    const stoppedAt = await f.settledIdle();
    // 24 MB once, then quiet: the slot holds more than CAPTURE_IDLE_QUIET_WAL over its floor
    const first = await advances();
    await fill(24);
    expect(await retained()).toBeGreaterThan(QUIET);
    // (the first advance moves restart_lsn one step, the second, 15 s later, empties it:
    // quiet-cluster.ts)
    await eventually(async () => (await retained()) < QUIET, 150_000, 'the slot to be advanced once the cluster is quiet');
    expect(await advances()).toBeGreaterThan(first);
    expect(await f.supervised()).toMatchObject({ state: 'idle', stopped_at: stoppedAt });
    expect(await f.connectState()).toBe('STOPPED');

    // Busy, right after that advance: about 3 MB a second for 30 s, far over 16 MB in any 30 s.
    // The slot soon holds more than CAPTURE_IDLE_QUIET_WAL over its floor, and nothing may advance
    // it (only step 7 could: 1 GB is far off). Started within a second of the advance, so the
    // advance's spacing (15 s) covers the time before the cluster's last 30 s read busy (~6 s).
    const before = await advances();
    let last = await retained();
    for (let i = 0; i < 30; i++) {
      const t = Date.now();
      await fill(3);
      const now = await retained();
      // it only grows: an advance would have dropped it to (nearly) nothing
      expect(now).toBeGreaterThanOrEqual(last);
      last = now;
      await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - t))));
    }
    expect(last).toBeGreaterThan(QUIET);
    expect(await advances()).toBe(before);

    // quiet again: advanced again, the connector still stopped
    await eventually(async () => (await retained()) < QUIET, 150_000, 'the slot to be advanced once the cluster is quiet again');
    expect(await f.supervised()).toMatchObject({ state: 'idle', stopped_at: stoppedAt });
    expect(await f.connectState()).toBe('STOPPED');
    // and nothing lost: a row committed now wakes it and arrives, once
    await f.insert('after');
    await eventually(async () => f.notes().includes('after'), 60_000, 'the row after');
    expect(f.notes().filter((n) => n === 'after')).toHaveLength(1);
    // (each quiet spell takes 30 s to be seen, and two advances 15 s apart: quiet-cluster.ts)
  }, 420_000);

  // The cost bound. A transaction left open anywhere in the cluster (here the admin database: the
  // slot tracks every transaction id) holds every slot's restart_lsn where it began, however often
  // the slot is advanced. Without the floor, step 7 would decode the whole slot every 15 s for as
  // long as that transaction stays open, for every idle project of the cluster.
  it('leaves alone a slot that a transaction open in the cluster keeps full, after two passes, until the cluster has written CAPTURE_IDLE_QUIET_WAL more', async () => {
    await f.settledIdle();
    const open = new pg.Client({ connectionString: stack().adminDatabaseUrl });
    await open.connect();
    try {
      await open.query(`begin; insert into ${table} values ('held open')`);
      const before = await advances();
      await fill(24);
      // two passes (the second is where an emptied slot would be found), both leaving it full
      await eventually(async () => (await advances()) >= before + 2, 150_000, 'two advances of the slot once the cluster is quiet');
      expect(await retained()).toBeGreaterThan(QUIET);
      // then none: the slot's floor is what it holds, and the cluster writes nothing more. Without
      // the floor, three more in these 50 s (one every 15 s)
      await new Promise((r) => setTimeout(r, 50_000));
      expect(await advances()).toBe(before + 2);
      expect(await f.connectState()).toBe('STOPPED');
      // the transaction ends, and once the cluster has written CAPTURE_IDLE_QUIET_WAL more and is
      // quiet again, the slot is emptied
      await open.query('commit');
      await fill(20);
      await eventually(async () => (await retained()) < QUIET, 150_000, 'the slot to be emptied once the transaction ended');
      expect(await f.connectState()).toBe('STOPPED');
    } finally {
      await open.end().catch(() => {});
    }
    await f.insert('last');
    await eventually(async () => f.notes().includes('last'), 60_000, 'the row after');
    expect(f.notes().filter((n) => n === 'last')).toHaveLength(1);
  }, 420_000);
});
