// A running connector whose project writes nothing still lets its slot follow the cluster's WAL,
// against the real stack. Debezium confirms a position to its slot only when it has decoded a
// commit of its own database: its heartbeat alone confirms nothing while other databases write
// (measured 2026-11-28 with a heartbeat every 2 s: 41 MB written in another database over 30 s,
// none of it confirmed, the slot holding all of it), so such a slot would hold the cluster's WAL
// until its project writes or its connector is stopped as idle, and on a busy cluster run into
// max_slot_wal_keep_size. The connector template's heartbeat.action.query
// (connectors/outbox-connector.json) commits a logical decoding message under a prefix the
// connector does not capture; Debezium confirms its commit like any other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slotName } from '../../src/outbox/index.js';
import { eventually, sql, stack } from '../helpers/env.js';
import { startIdleCapture, type IdleCaptureFixture } from '../helpers/idle-capture.js';

describe('a running connector with nothing to capture', () => {
  let f: IdleCaptureFixture;
  const table = `quiet_filler_${process.pid}`;

  beforeAll(async () => {
    // never stopped as idle, never switched to another speed: the connector just runs
    f = await startIdleCapture({ CAPTURE_IDLE_AFTER: '0', CAPTURE_SLOW_POLL: '0' });
  });

  afterAll(async () => {
    await sql(stack().adminDatabaseUrl, `drop table if exists ${table}`).catch(() => {});
    await f?.stop();
  });

  const slot = async () =>
    (
      await sql(
        f.project.databaseUrl,
        `select pg_wal_lsn_diff(confirmed_flush_lsn, $2::pg_lsn)::float8 as past, active from pg_replication_slots where slot_name = $1`,
        [slotName(f.project.ref, f.svc.cfg.TOPIC_PREFIX), '0/0'],
      )
    ).rows[0] as { past: number; active: boolean };

  it('confirms the WAL other databases write, with no write to its own database', async () => {
    await f.insert('first');
    await eventually(async () => f.notes().includes('first'), 60_000, 'the first row');
    // the template's heartbeat is a minute; every second here, the rest of its config as written
    const { name: _name, ...config } = (await f.svc.ctx.connect.config(f.connector))!;
    expect(config['heartbeat.action.query']).toMatch(/pg_logical_emit_message\(true, 'base_heartbeat'/);
    await f.svc.ctx.connect.upsert(f.connector, { ...config, 'heartbeat.interval.ms': '1000' });
    await f.svc.ctx.connect.waitRunning(f.connector, 60_000);
    await eventually(async () => (await slot()).active || null, 60_000, 'the task streaming again');

    // 16 MB into another database of the cluster; nothing into the project's
    await sql(stack().adminDatabaseUrl, `create table ${table} (id bigserial primary key, pad text)`);
    await sql(stack().adminDatabaseUrl, `insert into ${table} (pad) select repeat('x', 200) from generate_series(1, 50000)`);
    const end = (await sql(stack().adminDatabaseUrl, `select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 as at`)).rows[0].at as number;
    // confirmed at Connect's next offset flush (10 s) after a heartbeat past the writes
    await eventually(async () => (await slot()).past >= end || null, 90_000, 'the slot to confirm past the other database’s writes');
    // the heartbeats are not messages: nothing but the one row was delivered
    expect(f.notes()).toEqual(['first']);
  });
});
