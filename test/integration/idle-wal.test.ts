// An idle project's slot is not left to be invalidated by other databases' writes (idle-capture.ts,
// step 6), against the real stack: with its connector stopped and nothing written to its own
// database, a bulk write elsewhere on the cluster (here 64 MB into the admin database) makes its
// slot retain more than CAPTURE_IDLE_MAX_WAL, and the supervisor moves the stopped slot on at once
// (its periodic refresh is an hour away; a resumed connector would not move it, with no change in
// its own database), without resuming the connector; a row committed afterwards arrives.
// Without this, a 1,000,000-row backfill in one database lost all 100 idle projects' slots in the
// bench (max_slot_wal_keep_size 2 GB).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idleSlotAdvances } from '../../src/lib/metrics.js';
import { advanceIdleSlot, type AdvanceHow } from '../../src/outbox/idle-capture.js';
import { slotName } from '../../src/outbox/index.js';
import { QUIET_AFTER_MS, whyNotQuiet } from '../../src/outbox/quiet-database.js';
import { swapSlotName } from '../../src/outbox/slot-swap.js';
import { eventually, sql, stack } from '../helpers/env.js';
import { startIdleCapture, type IdleCaptureFixture } from '../helpers/idle-capture.js';

describe('idle capture: WAL held by an idle slot', () => {
  let f: IdleCaptureFixture;
  const table = `wal_filler_${process.pid}`;

  beforeAll(async () => {
    // step 7 (a quiet cluster's slots advanced early) off: these tests are about step 6's threshold
    f = await startIdleCapture({ CAPTURE_IDLE_AFTER: '3s', CAPTURE_IDLE_REFRESH: '1h', CAPTURE_IDLE_MAX_WAL: '32MB', CAPTURE_IDLE_QUIET_WAL: '0' });
  });

  afterAll(async () => {
    await sql(stack().adminDatabaseUrl, `drop table if exists ${table}`).catch(() => {});
    await f?.stop();
  });

  // Read from the admin database (slots and the WAL position are the cluster's): a connection of
  // the test's own to the project's database, opened while the supervisor judges whether the
  // counters prove the database unwritten, is a backend not yet settled, and makes it peek (the
  // first test below then saw a peek on its second advance, CI 2026-11-28).
  const slot = () => slotName(f.project.ref, f.svc.cfg.TOPIC_PREFIX);
  // NaN while the slot is being replaced: the drop and the copy are one statement, but another
  // session can read pg_replication_slots between them (CI 2026-11-29: no row, a TypeError)
  const retained = async () =>
    Number((await sql(stack().adminDatabaseUrl, 'select pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::float8 as r from pg_replication_slots where slot_name = $1', [slotName(f.project.ref, f.svc.cfg.TOPIC_PREFIX)])).rows[0]?.r);
  const walNow = async () => (await sql(stack().adminDatabaseUrl, 'select pg_current_wal_lsn()::text as l')).rows[0].l as string;
  const walSince = async (lsn: string) => Number((await sql(stack().adminDatabaseUrl, 'select pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::float8 as d', [lsn])).rows[0].d);

  const writes = async () =>
    Number((await sql(f.project.databaseUrl, `select (tup_inserted + tup_updated + tup_deleted)::float8 as w from pg_stat_database where datname = current_database()`)).rows[0].w);
  const readersIn = async () =>
    (await sql(f.project.databaseUrl, `select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'integrations:wake'`)).rows[0].n as number;

  const advances = async (how: 'counters' | 'peek' | 'replaced') => (await idleSlotAdvances.get()).values.find((v) => v.labels.how === how)?.value ?? 0;

  /** Backends of the project's database, other than the service's statistics readers, active or idle for less than `ms`. */
  const unsettled = async (ms: number) =>
    (
      await sql(
        f.project.databaseUrl,
        `select pid, state, application_name from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
            and application_name <> 'integrations:wake' and not (state = 'idle' and state_change < clock_timestamp() - make_interval(secs => $1))`,
        [ms / 1000],
      )
    ).rows;

  it('moves a stopped connector\'s slot that holds more than CAPTURE_IDLE_MAX_WAL, without a peek when the counters prove it, and loses nothing', async () => {
    await f.insert('before');
    await eventually(async () => f.notes().includes('before'), 60_000, 'the first row');
    const stoppedAt = await f.settledIdle();
    // every connection to the project's database has published its counters for certain (idle for
    // QUIET_AFTER), so the counters can stand in for the peek (quiet-database.ts)
    await eventually(async () => (await unsettled(QUIET_AFTER_MS + 1000)).length === 0, 60_000, 'connections to the project database to settle');
    const [byReplaced, byPeek] = [await advances('replaced'), await advances('peek')];
    // another database of the cluster writes 64 MB of WAL; nothing is written to the project's
    const before = await walNow();
    await eventually(async () => (await retained()) < 32 * 1024 * 1024, 10_000, 'the slot to hold little before the filler');
    await sql(stack().adminDatabaseUrl, `create table ${table} (x text)`);
    await sql(stack().adminDatabaseUrl, `insert into ${table} select repeat(md5(g::text), 32) from generate_series(1, 60000) g`);
    // the slot (which held less than 32 MB before) held the filler's WAL on top: read as the WAL
    // written, not as the slot, which the supervisor may already be replacing (CI 2026-11-29)
    expect(await walSince(before)).toBeGreaterThan(32 * 1024 * 1024);
    // the slot moves past the filler (no write of its own, the refresh an hour away), the
    // connector still stopped
    // (a second advance, ADVANCE_SPACING_MS later, may be what moves restart_lsn: PostgreSQL moves it
    // only up to where it logged the running transactions)
    await eventually(async () => (await retained()) < 32 * 1024 * 1024, 60_000, 'the slot to advance');
    expect(await f.supervised()).toMatchObject({ state: 'idle', stopped_at: stoppedAt });
    expect(await f.connectState()).toBe('STOPPED');
    // the counters proved it, so the slot was replaced by a new one (slot-swap.ts), not decoded
    expect((await advances('replaced')) - byReplaced).toBeGreaterThan(0);
    expect((await advances('peek')) - byPeek).toBe(0);
    // nothing lost: a row committed now wakes it and arrives
    await f.insert('after');
    await eventually(async () => f.notes().includes('after'), 60_000, 'the row after');
  });

  // The replacement (slot-swap.ts) creates a new slot, proves with the counters that nothing
  // uncaptured lies before its start, then drops the connector's slot and copies the new one under
  // its name. A row committed after the proof and before the drop (here, by the `enter` hook, which
  // runs just before it) is after the new slot's start: the copy must hold it, and it must arrive.
  // A slot created after the proof, or copied from the WAL's end, would lose it. Before that, a
  // transaction holding an xid open elsewhere in the cluster (a new slot would wait for it) makes
  // the advance fall back to pg_replication_slot_advance, the counters still standing in for the
  // peek, and so does a new slot that cannot be created (never a resume of the connector).
  it('replaces an idle slot in one step, falls back to advancing it while a transaction holds the cluster or the new slot cannot be made, and loses nothing committed during the replacement', async () => {
    await eventually(async () => (await f.supervised())?.state === 'idle', 120_000, 'the project to be idle again');
    await f.settledIdle();
    const give = await f.holdSupervision();
    const admin = new pg.Client({ connectionString: stack().adminDatabaseUrl });
    await admin.connect();
    try {
      await eventually(async () => (await readersIn()) === 0, 30_000, "the service's statistics readers to close");
      await eventually(async () => (await unsettled(QUIET_AFTER_MS + 1000)).length === 0, 60_000, 'connections to the project database to settle');
      expect((await f.supervised()).state).toBe('idle');
      await sql(stack().adminDatabaseUrl, `create table if not exists ${table} (x text)`);
      const advance = async (enter?: () => Promise<boolean>) => {
        let how: { how: AdvanceHow; because?: string } | undefined;
        const r = await advanceIdleSlot(f.svc.ctx, f.project.ref, f.connector, { backend: () => {}, stopped: () => false, own: () => [], decided: (h) => (how = h), enter });
        return { r, ...how };
      };

      // a transaction with an xid, open over a second, in another database of the cluster
      await admin.query(`begin; insert into ${table} values ('held open')`);
      await new Promise((r) => setTimeout(r, 1500));
      const held = await advance();
      expect(held).toMatchObject({ r: 'advanced', how: 'counters' });
      expect(held.because).toMatch(/xid has been open over a second/);
      await admin.query('rollback');

      // the new slot cannot be created, every slot of the cluster being in use (filled here with
      // physical slots that reserve no WAL; this file runs on a cluster of its own): advanced
      const fill = `fill_${process.pid}_`;
      try {
        for (let i = 0; ; i++) {
          const made = await admin.query('select pg_create_physical_replication_slot($1)', [fill + i]).then(() => true, (e: { code?: string }) => (e.code === '53400' ? false : Promise.reject(e)));
          if (!made) break;
        }
        const full = await advance();
        expect(full).toMatchObject({ r: 'advanced', how: 'counters' });
        expect(full.because).toMatch(/^creating the replacement slot failed: /);
      } finally {
        await admin.query(`select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name like $1`, [`${fill}%`]);
      }

      // replaced, with a row committed between the proof and the drop
      await sql(stack().adminDatabaseUrl, `insert into ${table} select repeat(md5(g::text), 32) from generate_series(1, 20000) g`);
      expect(await retained()).toBeGreaterThan(4 * 1024 * 1024);
      const swapped = await advance(async () => {
        await f.insert('during the replacement');
        return true;
      });
      expect(swapped).toMatchObject({ r: 'advanced', how: 'replaced' });
      // the new slot starts where the WAL ended: it holds next to nothing of the filler
      expect(await retained()).toBeLessThan(1024 * 1024);
      const slots = (await sql(stack().adminDatabaseUrl, `select slot_name, temporary, active from pg_replication_slots where slot_name in ($1, $2)`, [slot(), swapSlotName(slot())])).rows;
      expect(slots).toEqual([{ slot_name: slot(), temporary: false, active: false }]);
    } finally {
      await admin.end().catch(() => {});
      await give();
    }
    // the write wakes the project, and its row comes out of the copied slot, once
    await eventually(async () => f.notes().includes('during the replacement'), 60_000, 'the row committed during the replacement');
    expect(f.notes().filter((n) => n === 'during the replacement')).toHaveLength(1);
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
    // only the advance's read is held: the one made while the project is idle. A stop reads it
    // too (its peek), for a connector still recorded running: on a loaded machine the woken
    // connector can reach CAPTURE_IDLE_AFTER (3 s) before its row is delivered, and a stop held
    // here, with the connector stopped and the row in its slot, kept the row back until the
    // test gave up (CI)
    connect.processedPosition = async (name: string) => {
      if (!advancing && (await f.supervised())?.state === 'idle') {
        advancing = true;
        await held;
      }
      return real(name);
    };
    // a transaction left open in the project's database: the counters prove nothing while it is
    // (quiet-database.ts), so the advance peeks, and the peek is what is held here
    const open = new pg.Client({ connectionString: f.project.databaseUrl });
    await open.connect();
    await open.query('begin; select 1');
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
      await open.end().catch(() => {});
    }
    expect(f.notes().filter((n) => n === 'during the advance')).toHaveLength(1);
    expect(await f.connectState()).toBe('RUNNING');
  });

  // The counters stand in for the peek only when every connection's counters are published for
  // certain. An application connection that published less than a second before its commit holds
  // its counters back up to 10 s (PostgreSQL 15+), and without pg_stat_force_next_flush (a server
  // that withholds it from the database owner: base._publish_stats is then a no-op, as here) nothing
  // forces them out. Its message is in the slot, the counters still read W0: an advance trusting
  // them would skip the message, and it would never be delivered.
  it('does not trust counters a connection may still hold back: the peek finds the message, and it arrives', async () => {
    // (replacing the function writes to the catalogs, which moves the counters: done before the
    // stop that records W0)
    const replaced = new Date();
    await sql(f.project.databaseUrl, `create or replace function base._publish_stats() returns void language sql set search_path = pg_catalog as 'select'`);
    let note = '';
    try {
      // The premise, made sure of each time: the counters read W0 once the application's insert is
      // committed. Two things can break it, neither the service's doing: a write made before the
      // stop whose counters come out after W0 was read (the resume's flag update on the service's
      // pool, no longer forced out with the function replaced: settledIdle waits those out), and
      // the insert committed over a second after the read (a loaded machine), when PostgreSQL
      // publishes it at once. Then the row is let through and the test starts again from a new stop.
      for (let attempt = 1; ; attempt++) {
        await eventually(async () => {
          const s = await f.supervised();
          return s?.state === 'idle' && (s.stopped_at as Date) > replaced;
        }, 120_000, 'the project to be stopped again after the function was replaced');
        const stoppedAt = await f.settledIdle();
        // nothing wakes, stops or advances behind the test while it looks; the service's
        // statistics readers close with the lock (the test calls the advance without them)
        const give = await f.holdSupervision();
        const row = (await f.svc.ctx.db.query('select state, stopped_at, wake_writes from connector_supervision where project_ref = $1', [f.project.ref])).rows[0];
        if (row.state !== 'idle' || (row.stopped_at as Date).getTime() !== stoppedAt.getTime()) {
          await give();
          continue;
        }
        const w0 = Number(row.wake_writes);
        let held = false;
        note = `counters held back (${attempt})`;
        const app = new pg.Client({ connectionString: f.project.databaseUrl });
        try {
          await eventually(async () => (await readersIn()) === 0, 30_000, "the service's statistics readers to close");
          // and every other connection (the service's pool, used at the last resume) settled, so
          // that the application's is the only one that can stop the counters from being proof
          await eventually(async () => (await unsettled(QUIET_AFTER_MS + 500)).length === 0, 60_000, 'other connections to settle');
          await app.connect();
          // the application's connection publishes its counters (a read: W0 does not move) ...
          await app.query('select count(*) from public.crates');
          // ... so those of its next transaction, under a second later, are held back
          await app.query('insert into public.crates (note) values ($1)', [note]);
          const committed = Date.now();
          held = (await writes()) === w0;
          if (!held) {
            if (attempt === 3) throw new Error('three times the counters moved at once after the insert: the premise of this test could not be set up');
            continue;
          }
          let because: string | undefined;
          const result = await advanceIdleSlot(f.svc.ctx, f.project.ref, f.connector, { backend: () => {}, stopped: () => false, decided: (h) => (because = h.because) });
          // the counters alone would have said "nothing written": they still read W0
          expect(await writes()).toBe(w0);
          // what made the peek run: the application's connection, and only it
          expect(because).toBe(`backend(s) ${(app as unknown as { processID: number }).processID} connected and not waiting for a command for ${QUIET_AFTER_MS / 1000}s`);
          expect(result).toBe('pending');
          // what the proof rests on: an idle connection publishes counters it held back within
          // QUIET_AFTER (PostgreSQL's idle timer, 10 s), with nothing forcing them
          await new Promise((r) => setTimeout(r, Math.max(0, committed + QUIET_AFTER_MS - Date.now())));
          expect(await writes()).toBeGreaterThan(w0);
          break;
        } finally {
          await app.end().catch(() => {});
          await give();
          if (!held) await eventually(async () => f.notes().includes(note), 60_000, 'the row of an attempt whose counters went out at once');
        }
      }
    } finally {
      await sql(f.project.databaseUrl, `create or replace function base._publish_stats() returns void language sql set search_path = pg_catalog as 'select pg_catalog.pg_stat_force_next_flush()'`);
    }
    await eventually(async () => f.notes().includes(note), 60_000, 'the message whose counters were held back');
    expect(f.notes().filter((n) => n === note)).toHaveLength(1);
  });

  // whyNotQuiet on the real database, as a role of its own: what it cannot see or trust is never
  // taken as proof (quiet-database.ts). The service connects as a superuser in these tests, so a
  // role without pg_read_all_stats, to which other sessions' state reads as null, is made here.
  it('takes as proof only what it can see: not another role\'s sessions, not track_counts set for a role, not a transaction left open', async () => {
    // idle, and still idle once supervision is held (the previous test's last write, restoring
    // base._publish_stats, wakes the project once more after it first looks idle)
    let give: () => Promise<void>;
    for (;;) {
      await eventually(async () => (await f.supervised())?.state === 'idle', 120_000, 'the project to be idle again');
      give = await f.holdSupervision();
      await new Promise((r) => setTimeout(r, 1500));
      const flagged = (await sql(f.project.databaseUrl, 'select idle from base.capture')).rows[0]?.idle === true;
      if ((await f.supervised())?.state === 'idle' && flagged) break;
      await give();
    }
    const role = `quiet_watcher_${process.pid}`;
    const db = f.project.databaseUrl;
    await sql(db, `drop role if exists ${role}`);
    await sql(db, `create role ${role} login`);
    await sql(db, `grant usage on schema base to ${role}; grant select on base.capture to ${role}`);
    // a managed project's database lets in only its own role and the service (CONNECT revoked from PUBLIC)
    await sql(db, `grant connect on database ${new URL(db).pathname.slice(1)} to ${role}`);
    const url = new URL(db);
    url.username = role;
    url.password = '';
    const watcher = new pg.Client({ connectionString: url.toString() });
    await watcher.connect();
    // it names itself as the service's statistics readers do: the readers are known by pid and
    // start time, never by a name any session can set
    const other = new pg.Client({ connectionString: db, application_name: 'integrations:wake' });
    try {
      await eventually(async () => (await readersIn()) === 0, 30_000, "the service's statistics readers to close");
      // the counters as they are, read on the watcher's own connection (a connection of the
      // test's, closing as whyNotQuiet looks, would be another backend not yet settled)
      const counters = async () => Number((await watcher.query(`select (tup_inserted + tup_updated + tup_deleted)::float8 as w from pg_stat_database where datname = current_database()`)).rows[0].w);
      const now = async () => whyNotQuiet(watcher, await counters(), []);
      // proof, or the reason there is none (what a timeout reports)
      const proof = async () => {
        const why = await now();
        if (why !== null) throw new Error(why);
        return true;
      };
      expect(await now()).toMatch(/pg_read_all_stats/);
      await sql(db, `grant pg_read_all_stats to ${role}`);
      // nothing else connected (once the test's own connections have gone), the counters as they are: proof
      await eventually(proof, 60_000, 'proof with nothing else connected');
      // another session with a transaction open (named like a reader of the service)
      await other.connect();
      await other.query('begin; select 1');
      expect(await now()).toBe(`backend(s) ${(other as unknown as { processID: number }).processID} connected and not waiting for a command for ${QUIET_AFTER_MS / 1000}s`);
      await other.end();
      await eventually(proof, 30_000, 'the other session to be gone');
      // track_counts off for some role in this database
      await sql(db, `alter role ${role} in database ${pg.escapeIdentifier(new URL(db).pathname.slice(1))} set track_counts = off`);
      expect(await now()).toMatch(/track_counts/);
      await sql(db, `alter role ${role} in database ${pg.escapeIdentifier(new URL(db).pathname.slice(1))} reset track_counts`);
      await eventually(proof, 30_000, 'proof again');
      // counters other than W0: written to
      expect(await whyNotQuiet(watcher, (await counters()) - 1, [])).toBe('written to since the stop');
    } finally {
      await watcher.end().catch(() => {});
      await other.end().catch(() => {});
      await sql(db, `drop owned by ${role}; drop role if exists ${role}`).catch(() => {});
      await give();
    }
  });
});
