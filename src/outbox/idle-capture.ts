// Idle projects cost nothing. A running Debezium task costs CPU even with nothing to capture: JFR
// of an idle Connect shows ~80 % of its samples in ChangeEventQueue.poll, which with
// poll.interval.ms=10 wakes a hundred times a second and spins out the last sub-millisecond of each
// wait (Threads.Timer.remaining); measured here ~90 ms/s of Connect CPU per idle connector, plus a
// walsender. A STOPPED connector (KIP-875) has no task and no replication connection at all.
//
// So the supervisor (supervisor.ts) stops the connector of a project that has had no message for
// CAPTURE_IDLE_AFTER, and resumes it when its database is written to. The guarantee holds because a
// stopped connector's replication slot keeps every change: a row committed while the connector is
// stopped, stopping or resuming is read when it runs again. What must not happen is a row left in
// the slot with nothing to wake the connector for it:
//
//  1. Before stopping: the database's write counters W0 (pg_stat_database: tup_inserted +
//     tup_updated + tup_deleted; any enqueue inserts a row, or, from a webhook's trigger, runs on
//     the customer's own write) and the WAL position L0.
//  2. Stop, and wait until the slot has no reader.
//  3. Peek the slot up to L0 (pg_logical_slot_peek_binary_changes with the connector's
//     publication: only base.outbox inserts and logical decoding messages can appear), after the
//     connector's committed offset.
//     Anything there was committed before L0 and not captured: resume at once. Nothing: the
//     connector stays stopped ('idle').
//  4. Every CAPTURE_WAKE_INTERVAL, one query per database cluster reads the counters of every idle
//     project's database: a write since W0 resumes the connector. A row committed after step 1
//     moves the counters, so it wakes the connector; a row committed before step 1 is below L0 and
//     is found by step 3. PostgreSQL (15+) publishes a backend's counters when its transaction ends,
//     unless it published them less than a second before: then up to 10 s later
//     (PGSTAT_IDLE_INTERVAL), which an application connection that keeps writing hits every time.
//     So before step 1 the service sets base.capture.idle in the project's database, and while it
//     is set every enqueue calls pg_stat_force_next_flush(): the counters are published at commit
//     and the wake takes one check interval plus the task's start. Cleared when resumed.
//  5. A stopped connector is resumed at least every CAPTURE_IDLE_REFRESH anyway: its slot advances
//     (a stopped slot pins WAL of the whole cluster) and, should a wake ever be missed (the
//     statistics reset, say), the wait for that row is bounded by it.
//  6. A stopped connector's slot that retains more than CAPTURE_IDLE_MAX_WAL, or is that close to
//     max_slot_wal_keep_size (safe_wal_size), read in the same check as the counters, is advanced
//     at once (advanceIdleSlot): the WAL is the cluster's, so other databases' writes (a bulk
//     load, a million-row backfill) move it, and a slot past max_slot_wal_keep_size is
//     invalidated, every change of the project after it lost to capture. Found by the bench: a
//     1,000,000-row backfill in one database wrote over 2 GB of WAL in 25 minutes, and all 100
//     idle projects' slots were lost. Resuming the connector does not help: with no change in its
//     own database Debezium confirms no new position (the test saw the slot stay put). So the
//     slot is peeked up to the WAL's end (step 3's peek: an uncaptured message resumes the
//     connector instead) and moved there with pg_replication_slot_advance. The peek is skipped
//     when the write counters prove there is nothing to find (quiet-database.ts), and then the
//     slot is not advanced either but replaced by a new one at the WAL's end (slot-swap.ts), which
//     costs milliseconds where an advance decodes every byte the slot holds. The peek and the
//     advance run in the background, one slot at a time (IdleSlotAdvancer, slot-advancer.ts),
//     never in the way of step 4: a write to a project whose slot is being advanced cancels the
//     advance (a replacement's last statement is waited for) and resumes the connector.
//  7. While the cluster is quiet (it wrote less than CAPTURE_IDLE_QUIET_WAL in 30 s), the slot is
//     advanced the same way as soon as it holds that much more than after its last advance, so a
//     wake has almost nothing to decode before its message (quiet-cluster.ts).
//
// Writes to tables without webhooks wake a connector too; it stops again after CAPTURE_IDLE_AFTER.
// The cost of waking: the first message after an idle period waits for the wake check and the task
// start (bench run AB: p50 195 ms, p99 722 ms; docs/operations.md, "Idle projects"); a project
// with traffic never stops.
import pg from 'pg';
import { OWN_SEARCH_PATH } from '../db/index.js';
import type { AppContext } from '../context.js';
import { publicationName, slotName } from './connector.js';
import { byCluster, WRITES, whyNotQuiet, type OwnBackend, type StatsReaders } from './quiet-database.js';
import { advanceThreshold, type ClusterPace } from './quiet-cluster.js';
import { swapIdleSlot } from './slot-swap.js';

type Ctx = Pick<AppContext, 'db' | 'connect' | 'cfg' | 'projectDbs' | 'log'>;

export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000, application_name: 'integrations:supervisor', options: `-c search_path=${OWN_SEARCH_PATH}` });
  c.on('error', () => {});
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => {});
  }
}

export type StopResult = { stopped: true; writes: number } | { stopped: false; reason: string };

/**
 * Steps 1-3 above for one project whose connector is running. On `stopped: false` the connector
 * is running again (or was never stopped).
 */
export async function stopIdleConnector(ctx: Ctx, ref: string, connector: string): Promise<StopResult> {
  const url = await ctx.projectDbs.url(ref);
  const db = databaseName(url);
  const slot = slotName(ref, ctx.cfg.TOPIC_PREFIX);
  const publication = publicationName(ref, ctx.cfg.TOPIC_PREFIX);
  // from now on every enqueue publishes its counters at once (base.capture, base-schema.sql); set
  // before W0 is read, so a row counted after W0 has been published without delay. The flag's own
  // update moves the counters: it is made on a connection of its own, which publishes them when it
  // exits, and W0 is read after that (without pg_stat_force_next_flush, a server that withholds it,
  // a connection a second old holds them back, and every stop was followed by a wake for nothing).
  await setCaptureIdlePublished(url, true, ctx);
  return withClient(url, async (c) => {
    const stopped = await stopAndPeek(c);
    if (!stopped.stopped) await setCaptureIdle(c, false, ctx);
    return stopped;
  });

  async function stopAndPeek(c: pg.Client): Promise<StopResult> {
    const before = (await c.query(`select (select ${WRITES} from pg_stat_database where datname = $1)::float8 as writes, pg_current_wal_lsn()::text as lsn`, [db])).rows[0];
    await ctx.connect.setTarget(connector, 'stop');
    // the task's replication connection goes with it; peeking needs the slot free
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await c.query('select active from pg_replication_slots where slot_name = $1', [slot]);
      if (r.rowCount === 0) {
        await ctx.connect.setTarget(connector, 'resume');
        return { stopped: false, reason: 'the replication slot does not exist' };
      }
      if (!r.rows[0].active) break;
      if (Date.now() > deadline) {
        await ctx.connect.setTarget(connector, 'resume');
        return { stopped: false, reason: 'the slot still had a reader 30s after the stop' };
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Messages up to L0 that the connector has not processed ('I': an insert into base.outbox, the
    // only table of the publication). The slot's confirmed position trails what the connector
    // processed (Debezium confirms to the slot lazily), so its own committed offset, read after
    // the stop's final commit, says where it was: transactions come out of the slot in commit
    // order, so what follows its last transaction (and, within that one, its last change) is new.
    const pending = await uncaptured(c, ctx, connector, slot, publication, before.lsn);
    if (pending > 0) {
      await ctx.connect.setTarget(connector, 'resume');
      return { stopped: false, reason: `${pending} message(s) committed just before the stop were not captured yet` };
    }
    return { stopped: true, writes: Number(before.writes ?? 0) };
  }
}

/**
 * Messages in the slot up to `upto` that the connector has not processed ('I': an insert into
 * base.outbox, the only table of the publication; 'M': a transactional logical decoding message
 * under the project's own prefix, base.capture.message_prefix, which the webhook trigger writes and
 * the connector alone reads: any role may emit a message under another prefix, which the connector
 * skips, and which must neither resume an idle project nor keep its slot where it is). pgoutput's
 * 'M' record: type, flags (1 byte), LSN (8), then the prefix, NUL-terminated. The slot's confirmed position trails what the
 * connector processed (Debezium confirms to the slot lazily), so its own committed offset says
 * where it was: transactions come out of the slot in commit order, so what follows its last
 * transaction (and, within that one, its last change) is new. The slot must have no reader.
 */
async function uncaptured(c: Pick<pg.Client, 'query'>, ctx: Ctx, connector: string, slot: string, publication: string, upto: string, stopped?: () => boolean): Promise<number> {
  const at = await ctx.connect.processedPosition(connector);
  if (stopped?.()) throw new Error('stopped before the peek: a wake wants the slot');
  // pgoutput takes 'messages' from PostgreSQL 14 (before it, the project is never armed: messages.ts)
  const v14 = Number((await c.query(`select current_setting('server_version_num') as v`)).rows[0].v) >= 140000;
  const pending = await c.query(
    `with p as (select convert_to(message_prefix, 'UTF8') || '\\x00'::bytea as m from base.capture),
     ch as (
       select x.lsn, x.xid, x.n,
              get_byte(x.data, 0) = ascii('I')
              or (get_byte(x.data, 0) = ascii('M') and substring(x.data from 11 for length(p.m)) = p.m) as outbox
         from pg_logical_slot_peek_binary_changes($1, $2::pg_lsn, null, 'proto_version', '1', 'publication_names', $3${v14 ? `, 'messages', 'true'` : ''}) with ordinality as x(lsn, xid, data, n)
         left join p on true),
     last as (select max(n) as n from ch where $4::text is not null and xid = $4::xid)
     select count(*)::int as n from ch, last
      where ch.outbox
        and (last.n is null or (ch.xid <> $4::xid and ch.n > last.n) or (ch.xid = $4::xid and ch.lsn > $5::pg_lsn))`,
    [slot, upto, publication, at?.txId ?? null, at?.lsn ?? null],
  );
  return pending.rows[0].n;
}

export type AdvanceResult = 'advanced' | 'pending' | 'busy';

/**
 * How an advance showed that nothing it skips is a message not yet captured, and how it moved the
 * slot: peek (the slot decoded, then advanced), counters (the write counters, then advanced),
 * replaced (the write counters, and a new slot put in its place: slot-swap.ts).
 */
export type AdvanceHow = 'peek' | 'counters' | 'replaced';

/** How the advancer follows and stops an advance: its backend (to cancel), and a stop asked for. */
export interface AdvanceHooks {
  backend(pid: number): void;
  /** true: stop before the peek or the advance (a wake wants the slot) */
  stopped(): boolean;
  /** the service's statistics readers, which never enqueue (quiet-database.ts) */
  own?(): OwnBackend[];
  /**
   * How the slot is moved; `because`: why the counters cannot stand in for the peek (peek), or why
   * the slot could not be replaced (counters)
   */
  decided?(how: { how: AdvanceHow; because?: string }): void;
  /** false: a wake asked to stop; true: the replacement's drop and copy begin and are not to be cancelled (slot-swap.ts, step 4) */
  enter?(): boolean | Promise<boolean>;
  /** the WAL the slot still holds just after its advance (step 7's floor) */
  held?(bytes: number): void;
}

/**
 * Step 6 for one idle project: moves its stopped connector's slot up to the WAL's current end,
 * once nothing up to there is known to be a message not yet captured ('pending': there is, so
 * resume the connector instead). The write counters prove it when every committed write of the
 * database is published and none happened since the stop (quiet-database.ts); otherwise a peek of
 * the slot decides. A resumed connector would not move the slot: with no change in its own
 * database, Debezium confirms no new position to it. Changes committed after that end are after
 * the new position, so they are read when the connector next runs. 'busy': the slot has a reader,
 * or the project is no longer idle (a wake got there first).
 */
export async function advanceIdleSlot(ctx: Ctx, ref: string, connector: string, hooks?: AdvanceHooks): Promise<AdvanceResult> {
  const url = await ctx.projectDbs.url(ref);
  const slot = slotName(ref, ctx.cfg.TOPIC_PREFIX);
  return withClient(url, async (c) => {
    hooks?.backend((await c.query('select pg_backend_pid() as pid')).rows[0].pid);
    const idle = (await ctx.db.query(`select wake_writes from connector_supervision where project_ref = $1 and state = 'idle'`, [ref])).rows[0];
    if (!idle) return 'busy';
    const r = await c.query('select active from pg_replication_slots where slot_name = $1', [slot]);
    if (!r.rows[0] || r.rows[0].active) return 'busy';
    const upto = (await c.query('select pg_current_wal_lsn()::text as l')).rows[0].l as string;
    const own = hooks?.own?.() ?? [];
    const because = await whyNotQuiet(c, Number(idle.wake_writes), own);
    if (because !== null) {
      hooks?.decided?.({ how: 'peek', because });
      const pending = await uncaptured(c, ctx, connector, slot, publicationName(ref, ctx.cfg.TOPIC_PREFIX), upto, hooks?.stopped);
      if (pending > 0) return 'pending';
    } else {
      if (hooks?.stopped()) throw new Error('stopped before the advance: a wake wants the slot');
      // nothing written since the stop: put a new slot in its place, at no decoding cost
      const swap = await swapIdleSlot(c, slot, { w0: Number(idle.wake_writes), own, enter: () => hooks?.enter?.() ?? !hooks?.stopped() });
      hooks?.decided?.({ how: swap.swapped ? 'replaced' : 'counters', because: swap.swapped ? undefined : swap.why });
      if (swap.swapped) return measured(c);
      // (the counters' proof up to `upto` still holds: advance there)
      if (hooks?.stopped()) throw new Error('stopped before the advance: a wake wants the slot');
    }
    await c.query('select pg_replication_slot_advance($1, $2::pg_lsn)', [slot, upto]);
    return measured(c);
  });

  /** The slot moved: what it still holds (step 7's floor), then 'advanced'. */
  async function measured(c: pg.Client): Promise<AdvanceResult> {
    if (hooks?.held) {
      const h = await c.query('select pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::float8 as held from pg_replication_slots where slot_name = $1', [slot]);
      if (h.rows[0]) hooks.held(Number(h.rows[0].held));
    }
    return 'advanced';
  }
}

/**
 * Tells the project's database whether its connector is stopped (base.capture.idle): while it is,
 * each enqueue publishes the backend's statistics at commit, so the wake sees the write at its
 * next check instead of up to 10 s later. Best effort: a flag left set costs a busy project one
 * forced statistics flush per message, a flag not set only delays a wake.
 */
export async function setCaptureIdle(c: Pick<pg.Client, 'query'>, idle: boolean, ctx: Pick<Ctx, 'log'>): Promise<void> {
  // The update is a write the wake counts: published at once (as an enqueue's is while idle), or
  // a connection that published under a second before would move the counters up to 10 s later,
  // after the next stop took W0, and wake the project for nothing.
  const set = (columns: string) => c.query(`with u as (update base.capture set ${columns} where idle is distinct from $1 returning 1) select base._publish_stats() from u`, [idle]);
  await set('idle = $1, idle_since = case when $1 then now() end')
    // a schema installed by an earlier build, until the start re-installs it (enable.ts): no
    // idle_since, so step 6 peeks (quiet-database.ts)
    .catch((err: pg.DatabaseError) => (err.code === '42703' ? set('idle = $1') : Promise.reject(err)))
    .catch((err: Error) => ctx.log.debug({ err: err.message }, 'could not set base.capture.idle'));
}

/**
 * setCaptureIdle on a connection of its own, returning once its counters are published: a backend
 * publishes them as it exits, before it leaves pg_stat_activity (pgstat_shutdown_hook runs before
 * pgstat_beshutdown_hook).
 */
async function setCaptureIdlePublished(url: string, idle: boolean, ctx: Pick<Ctx, 'log'>): Promise<void> {
  const pid = await withClient(url, async (c) => {
    await setCaptureIdle(c, idle, ctx);
    return (await c.query('select pg_backend_pid() as pid')).rows[0].pid as number;
  });
  await withClient(url, async (c) => {
    for (let i = 0; i < 500; i++) {
      if ((await c.query('select 1 from pg_stat_activity where pid = $1', [pid])).rowCount === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // not lost: its counters move later and wake the project once for nothing
    ctx.log.warn({ pid }, 'the connection that set base.capture.idle had not exited 5 s after closing; its write may wake the project once');
  });
}

export interface IdleProject {
  ref: string;
  connector: string;
  wake_writes: string | null;
  /** connector_supervision.stopped_at, in ms since the epoch */
  stopped_ms: number;
  /** projects.database_url_enc, read in the same query (ProjectDatabases.open) */
  database_url_enc: Buffer;
}

/** An idle project to resume (a write, its periodic refresh) or whose slot to advance ('wal'). */
export interface Wake {
  ref: string;
  connector: string;
  why: 'write' | 'refresh' | 'wal';
  /** 'wal' only: the slot is within CAPTURE_IDLE_MAX_WAL of max_slot_wal_keep_size (not held back by ADVANCE_SPACING_MS) */
  nearLoss?: boolean;
  /** 'wal' only: by step 7 (the cluster is quiet), with what the slot held and the cluster wrote in 30 s */
  quiet?: { held: number; written: number };
}

/** What the wake check reads through and judges slots by: the slot advancer's (IdleSlotAdvancer, slot-advancer.ts). */
export interface SlotWatch {
  readonly readers: StatsReaders;
  readonly pace: ClusterPace;
  floor(ref: string): number;
}

/**
 * Step 4 and 5: which idle projects to resume now, and (step 6 and 7) whose slot to advance. Reads
 * pg_stat_database once per cluster (it is cluster-wide), through the cluster's statistics reader
 * (StatsReaders), connected to one of its project databases.
 */
export async function projectsToWake(ctx: Ctx, idle: IdleProject[], advancer: SlotWatch): Promise<Wake[]> {
  const readers = advancer.readers;
  const now = Date.now();
  const out: Wake[] = [];
  const checked: { item: IdleProject; url: string }[] = [];
  for (const p of idle) {
    if (now - p.stopped_ms >= ctx.cfg.CAPTURE_IDLE_REFRESH) out.push({ ref: p.ref, connector: p.connector, why: 'refresh' });
    else checked.push({ item: p, url: ctx.projectDbs.open(p.ref, p.database_url_enc) });
  }
  await Promise.all(
    [...byCluster(checked)].map(async ([key, { url, members: inCluster }]) => {
      const members = inCluster.map((m) => ({ p: m.item, db: databaseName(m.url) }));
      try {
        // On a kept-open connection that only reads (step 6 knows it never enqueues). One statement:
        // the databases whose counters moved since W0 or are gone (step 4; compared in SQL, so a
        // check that finds nothing parses no rows), and at most once a second (ClusterPace.due) the
        // WAL each idle slot holds and may still hold (step 6) and where the WAL ends (step 7).
        const slotsDue = advancer.pace.due(key, now);
        const { rows } = await readers.query(key, url,
          `select 'db' as kind, w.name, null::float8 as retained, null::float8 as safe, null::float8 as wal_end
             from unnest($1::text[], $2::numeric[]) as w(name, w0)
             left join (select datname, (${WRITES})::numeric as writes from pg_stat_database where datname = any($1)) d on d.datname = w.name
            where d.datname is null or w.w0 is null or d.writes <> w.w0
           union all
           select 'slot', slot_name, pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::float8, safe_wal_size::float8,
                  pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8
             from pg_replication_slots where $4 and slot_name = any($3)`,
          [members.map((m) => m.db), members.map((m) => m.p.wake_writes), members.map((m) => slotName(m.p.ref, ctx.cfg.TOPIC_PREFIX)), slotsDue],
        );
        const moved = new Set(rows.filter((x) => x.kind === 'db').map((x) => x.name as string));
        const slotRows = rows.filter((x) => x.kind === 'slot');
        const slots = new Map(slotRows.map((x) => [x.name as string, x as { retained: number | null; safe: number | null }]));
        const max = ctx.cfg.CAPTURE_IDLE_MAX_WAL;
        const written = slotRows.length > 0 ? advancer.pace.record(key, Number(slotRows[0].wal_end)) : null;
        for (const m of members) {
          const slot = slots.get(slotName(m.p.ref, ctx.cfg.TOPIC_PREFIX));
          const held = slot?.retained ?? 0;
          const limit = advanceThreshold({ maxWal: max, quietWal: ctx.cfg.CAPTURE_IDLE_QUIET_WAL, written, floor: advancer.floor(m.p.ref) });
          // moved either way: a write, or the statistics were reset (resume rather than guess)
          if (moved.has(m.db)) out.push({ ref: m.p.ref, connector: m.p.connector, why: 'write' });
          else if (slot && (held > limit.bytes || (slot.safe !== null && slot.safe < max))) {
            const quiet = limit.quiet && held <= max ? { held, written: written! } : undefined;
            out.push({ ref: m.p.ref, connector: m.p.connector, why: 'wal', nearLoss: slot.safe !== null && slot.safe < max, ...(quiet && { quiet }) });
          }
        }
      } catch (err) {
        // the cluster is away: nothing can be written to it either; the next check tries again
        ctx.log.debug({ err }, 'reading write counters of idle projects failed');
      }
    }),
  );
  return out;
}
