// Step 6 of idle capture (idle-capture.ts) without its peek, when that is provably safe.
//
// Moving an idle slot past other databases' WAL needs to know that nothing in the range it skips
// is a message not yet captured. The peek finds out by decoding the range, and the advance then
// decodes it again (both in fast-forward over other databases' records, ~equal cost): with many idle
// projects on a write-heavy cluster that is 0.2 ms of PostgreSQL CPU per message written (bench runs
// Q and R, docs/benchmark.md). The write counters can answer instead, when PostgreSQL has provably
// published every committed write of the database:
//
//  1. `upto` = the WAL's end is read first; only what committed before it is skipped.
//  2. Every other backend connected to the database is a client backend that has been idle, and
//     waiting for its next command (wait_event ClientRead: one blocked writing to its client has
//     not run its idle timer), for QUIET_AFTER or more (or an autovacuum worker, which never
//     enqueues), apart from the service's
//     own statistics readers (StatsReaders), which only read. A backend publishes its counters
//     before it reports itself idle, unless it published less than a second before (PostgreSQL
//     15+, pgstat_report_stat): then an idle timer (PGSTAT_IDLE_INTERVAL, 10 s) forces them out
//     while it waits for its next command (postgres.c, ProcessInterrupts: IdleStatsUpdateTimeout).
//     A backend that exited published at exit (pgstat_shutdown_hook runs before it leaves
//     pg_stat_activity). So a transaction that committed before `upto` has its counters published
//     by now, whether base.capture.idle made it force them or not. Anything else connected (active,
//     idle in a transaction, idle for less than QUIET_AFTER, a background worker, a walsender, or a
//     backend whose state this role may not read) is not proof, and the peek decides.
//  3. Then (a later statement, so a fresh read of the statistics) the counters are still the W0
//     recorded when the connector stopped: nothing was written to the database after W0, so no
//     message committed between the stop's own peek (up to L0, which is after W0) and `upto`.
//     The counters must be the same series as W0's: base.capture.idle_since (set with the flag,
//     just before W0 was read, by the database's own clock) is after the server's start and after
//     the last reset of the database's and the WAL's statistics (a crash drops the counters; they
//     could climb back to W0 by coincidence).
//
// Needs PostgreSQL 15+ (shared-memory statistics; before it the counters travelled over UDP and
// could be dropped), track_counts on (and not turned off for a role or the database), and a role
// that sees other sessions' state (pg_read_all_stats; otherwise every session is unknown). What
// it cannot see: a superuser's session that turns track_counts off with SET. Otherwise, or
// whenever a condition fails, the peek runs as before: a fast path, never a different answer.
import pg from 'pg';
import { OWN_SEARCH_PATH } from '../db/index.js';

/** How long a backend must have been idle for its counters to be published for certain (10 s timer + margin). */
export const QUIET_AFTER_MS = 15_000;

/** A backend of the service itself, by pid and start time (a pid alone can be reused; microseconds since the epoch). */
export interface OwnBackend {
  pid: number;
  start: string;
}

/** A database's write counters (pg_stat_database): an enqueue inserts a row, or (a webhook's trigger) runs on the customer's own write, so it moves them. */
export const WRITES = 'tup_inserted + tup_updated + tup_deleted';

/** The database cluster a connection string points at: statistics and slots are per cluster, so one reader serves it. */
function clusterKey(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port}`;
}

/**
 * Projects grouped by their database's cluster (clusterKey), each with its connection string, and
 * one of those strings per cluster to read the cluster's statistics through.
 */
export function byCluster<T>(items: Iterable<{ item: T; url: string }>): Map<string, { url: string; members: { item: T; url: string }[] }> {
  const clusters = new Map<string, { url: string; members: { item: T; url: string }[] }>();
  for (const m of items) {
    const key = clusterKey(m.url);
    const cluster = clusters.get(key) ?? { url: m.url, members: [] };
    cluster.members.push(m);
    clusters.set(key, cluster);
  }
  return clusters;
}

/**
 * Why the counters cannot prove this database unwritten since W0 (null: they can). `c` is connected
 * to the database and runs nothing else meanwhile; `upto` was read on it before this call.
 */
export async function whyNotQuiet(c: Pick<pg.Client, 'query'>, w0: number, own: readonly OwnBackend[]): Promise<string | null> {
  const s = (
    await c.query(
      `with cap as (select to_jsonb(c) as j from base.capture c)
       select current_setting('server_version_num')::int as version,
              current_setting('track_counts') as track_counts,
              pg_has_role(current_user, 'pg_read_all_stats', 'usage') as sees_all,
              -- track_counts turned off for a role or this database (a session's own SET needs a superuser)
              exists (select 1 from pg_db_role_setting r, unnest(r.setconfig) g
                       where r.setdatabase in (0, (select oid from pg_database where datname = current_database()))
                         and g ilike 'track_counts=%') as track_counts_set,
              coalesce((select (j ->> 'idle')::boolean from cap), false) as flagged,
              -- the flag was set (just before W0 was read; the database's own clock) after the server
              -- started and after its statistics were last reset: a crash, which drops the statistics,
              -- restarts the server or resets the WAL statistics. Null (no idle_since: a schema from
              -- before it) is not proof.
              (select (j ->> 'idle_since')::timestamptz from cap) >
                greatest(pg_postmaster_start_time(), (select stats_reset from pg_stat_wal),
                         (select stats_reset from pg_stat_database where datname = current_database())) as same_epoch`,
    )
  ).rows[0];
  if (s.version < 150000) return 'PostgreSQL before 15 may drop statistics';
  if (s.track_counts !== 'on' || s.track_counts_set) return 'track_counts is off, or set for a role or the database';
  if (!s.sees_all) return "this role cannot read other sessions' state (pg_read_all_stats)";
  if (!s.flagged) return 'base.capture.idle is not set';
  if (s.same_epoch !== true) return 'the server restarted, or its statistics were reset, since the stop (or base.capture has no idle_since)';
  // Every other backend of the database, unless it is a client backend waiting for its next
  // command (idle, ClientRead: a backend idle while blocked writing to its client has not run its
  // idle timer) for QUIET_AFTER, an autovacuum worker, or one of the service's readers. A column
  // this role may not see is null, and a null never counts as settled.
  const others = (
    await c.query(
      `select array_agg(a.pid order by a.pid) as pids from pg_stat_activity a
        where a.datid = (select oid from pg_database where datname = current_database())
          and a.pid <> pg_backend_pid()
          and not coalesce(a.backend_type = 'autovacuum worker', false)
          and not coalesce(a.backend_type = 'client backend' and a.state = 'idle' and a.wait_event = 'ClientRead'
                           and a.state_change < clock_timestamp() - make_interval(secs => $1), false)
          and not exists (select 1 from unnest($2::int[], $3::text[]) o(pid, start)
                           where o.pid = a.pid and o.start = (extract(epoch from a.backend_start) * 1000000)::bigint::text)`,
      [QUIET_AFTER_MS / 1000, own.map((o) => o.pid), own.map((o) => o.start)],
    )
  ).rows[0].pids as number[] | null;
  if (others && others.length > 0) return `backend(s) ${others.join(', ')} connected and not waiting for a command for ${QUIET_AFTER_MS / 1000}s`;
  const w = (await c.query(`select (${WRITES})::float8 as writes from pg_stat_database where datname = current_database()`)).rows[0];
  if (!w) return 'no statistics for the database';
  if (Number(w.writes) !== Number(w0)) return 'written to since the stop';
  return null;
}

/**
 * The wake check's connections, one per database cluster, kept open and used for nothing but
 * reading statistics: they never enqueue, so whyNotQuiet does not count them (read every
 * CAPTURE_WAKE_INTERVAL, the database they sit in would otherwise never look quiet).
 */
export class StatsReaders {
  readonly #readers = new Map<string, { client: pg.Client; opened: Promise<OwnBackend>; me?: OwnBackend }>();

  async query(cluster: string, url: string, text: string, params: unknown[]): Promise<pg.QueryResult> {
    let r = this.#readers.get(cluster);
    if (!r) {
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000, application_name: 'integrations:wake', options: `-c search_path=${OWN_SEARCH_PATH}` });
      const reader: { client: pg.Client; opened: Promise<OwnBackend>; me?: OwnBackend } = {
        client,
        opened: client.connect().then(async () => {
          const row = (await client.query(`select pid, (extract(epoch from backend_start) * 1000000)::bigint::text as start from pg_stat_activity where pid = pg_backend_pid()`)).rows[0];
          reader.me = { pid: row.pid, start: row.start };
          return reader.me;
        }),
      };
      const drop = () => {
        if (this.#readers.get(cluster) === reader) this.#readers.delete(cluster);
        reader.me = undefined;
      };
      client.on('error', drop);
      client.on('end', drop);
      this.#readers.set(cluster, reader);
      r = reader;
    }
    try {
      await r.opened;
      return await r.client.query(text, params);
    } catch (err) {
      if (this.#readers.get(cluster) === r) this.#readers.delete(cluster);
      r.me = undefined;
      await r.client.end().catch(() => {});
      throw err;
    }
  }

  /** The readers' backends that are open now. */
  own(): OwnBackend[] {
    return [...this.#readers.values()].flatMap((r) => (r.me ? [r.me] : []));
  }

  async close(): Promise<void> {
    const all = [...this.#readers.values()];
    this.#readers.clear();
    await Promise.all(all.map((r) => ((r.me = undefined), r.client.end().catch(() => {}))));
  }
}
