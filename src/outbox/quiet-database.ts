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
//  2. Every other backend connected to the database is a client backend that has been idle for
//     QUIET_AFTER or more (or an autovacuum worker, which never enqueues), apart from the service's
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
//     recorded when the connector stopped, and were not reset since: nothing was written to the
//     database after W0, so no message committed between the stop's own peek (up to L0, which is
//     after W0) and `upto`.
//
// Needs PostgreSQL 15+ (shared-memory statistics; before it the counters travelled over UDP and
// could be dropped) and track_counts on. Otherwise, or whenever a condition fails, the peek runs as
// before: a fast path, never a different answer.
import pg from 'pg';

/** How long a backend must have been idle for its counters to be published for certain (10 s timer + margin). */
export const QUIET_AFTER_MS = 15_000;

/** A backend of the service itself, by pid and start time (a pid alone can be reused). */
export interface OwnBackend {
  pid: number;
  start: string;
}

const WRITES = 'tup_inserted + tup_updated + tup_deleted';

/**
 * Why the counters cannot prove this database unwritten since W0 (null: they can). `c` is connected
 * to the database and runs nothing else meanwhile; `upto` was read on it before this call.
 */
export async function whyNotQuiet(c: Pick<pg.Client, 'query'>, since: { writes: number; stoppedAt: Date }, own: readonly OwnBackend[]): Promise<string | null> {
  const s = (await c.query(`select current_setting('server_version_num')::int as version, current_setting('track_counts') as track_counts`)).rows[0];
  if (s.version < 150000) return 'PostgreSQL before 15 may drop statistics';
  if (s.track_counts !== 'on') return 'track_counts is off';
  const others = (
    await c.query(
      `select count(*)::int as n from pg_stat_activity a
        where a.datid = (select oid from pg_database where datname = current_database())
          and a.pid <> pg_backend_pid()
          and a.backend_type is distinct from 'autovacuum worker'
          and not (a.backend_type = 'client backend' and a.state = 'idle' and a.state_change < clock_timestamp() - make_interval(secs => $1))
          and not exists (select 1 from unnest($2::int[], $3::timestamptz[]) o(pid, start) where o.pid = a.pid and o.start = a.backend_start)`,
      [QUIET_AFTER_MS / 1000, own.map((o) => o.pid), own.map((o) => o.start)],
    )
  ).rows[0].n as number;
  if (others > 0) return `${others} other backend(s) connected and not idle for ${QUIET_AFTER_MS / 1000}s`;
  const w = (await c.query(`select (${WRITES})::float8 as writes, stats_reset from pg_stat_database where datname = current_database()`)).rows[0];
  if (!w) return 'no statistics for the database';
  if (w.stats_reset !== null && (w.stats_reset as Date).getTime() >= since.stoppedAt.getTime()) return 'statistics reset since the stop';
  if (Number(w.writes) !== Number(since.writes)) return 'written to since the stop';
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
      const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000, application_name: 'integrations:wake' });
      const reader: { client: pg.Client; opened: Promise<OwnBackend>; me?: OwnBackend } = {
        client,
        opened: client.connect().then(async () => {
          const row = (await client.query(`select pid, backend_start::text as start from pg_stat_activity where pid = pg_backend_pid()`)).rows[0];
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
