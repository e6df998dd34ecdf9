// The connector supervisor: every CONNECTOR_SUPERVISE_INTERVAL, one process (of those running the
// dispatcher role) reads the state of every project's Debezium connector from Kafka Connect and
// restarts what failed, the way Strimzi's autoRestart does for KafkaConnectors, so that a database
// restart, a failover or a network blip never needs a person.
//
// - One process at a time: a session advisory lock in the control database, held on a connection
//   of its own. When that process dies, or loses the control database, the lock goes with its
//   session and another process takes it at its next check.
// - A FAILED connector or task is restarted (POST /connectors/{name}/restart?includeTasks=true&
//   onlyFailed=true: running tasks are not disturbed) only when its database accepts connections:
//   while it does not, the connector is `waiting_for_database`, which costs no restart and no
//   backoff, so it is restarted at the first check after the database is back.
// - Restarts made while the database is reachable back off: 5s, 10s, 20s, … up to
//   CONNECTOR_RESTART_BACKOFF_MAX. After CONNECTOR_RESTART_REPORT_AFTER of them in a row the
//   connector is `failing`: an error line, and /health says so; restarts go on at the backoff, so a
//   cause fixed later (a password, a dropped publication) heals without a person either. A connector
//   seen running for a minute starts from zero again.
// - A connector missing from Connect (deleted, or Connect lost its config topic) is registered
//   again from its replication slot (refreshOutbox), which kept every change meanwhile.
// - Each project's replication slot is read along the way (one query per database cluster,
//   slot-figures.ts): WAL retained and not yet confirmed, wal_status, and how long changes have
//   waited with no consumer.
//
// What it knows is written to connector_supervision (migration 090), where /health and the
// dashboard read it from any process.
import pg from 'pg';
import { OWN_SEARCH_PATH } from '../db/index.js';
import type { AppContext } from '../context.js';
import { connectorRestarts, connectorStates, slotCaptureLagSecondsMax, slotRetainedBytesMax } from '../lib/metrics.js';
import type { ConnectorStatus } from '../kafka/index.js';
import { templatePollInterval } from './connector.js';
import { refreshProjectOutbox } from './service.js';
import { setCaptureIdle, stopIdleConnector } from './idle-capture.js';
import { IdleSlotAdvancer } from './slot-advancer.js';
import { wakeIdleProjects, WakeResumer } from './wake.js';
import { readSlotFigures, type SlotInfo } from './slot-figures.js';
import { applySpeed, recentMessagesCap, wantedSpeed, type CaptureSpeed } from './capture-speed.js';
import { hostname } from 'node:os';

type Ctx = Pick<AppContext, 'db' | 'connect' | 'cfg' | 'topics' | 'projectDbs' | 'log'>;

/** The session advisory lock (control database) whose holder supervises. */
export const LOCK_KEY = 0x636f6e6e; // "conn"
const FIRST_BACKOFF_MS = 5_000;
/** running this long after a restart: the restart counter starts from zero again */
const STABLE_MS = 60_000;
/** speed changes (task restarts) per check at most (capture-speed.ts) */
const SPEED_SWITCHES_PER_CHECK = 5;
/** a connector resumed less than this ago and still STOPPED in Connect's status: the resume is on its way */
const RESUME_APPLIED_MS = 30_000;
/** slots are read every this many checks (and at every check where a connector is not running) */
const SLOT_EVERY = 6;

export type SupervisedState = 'running' | 'restarting' | 'failing' | 'waiting_for_database' | 'missing' | 'idle';

interface Row {
  ref: string;
  connector: string;
  state: SupervisedState | null;
  restarts: number;
  total_restarts: number;
  last_restart_at: Date | null;
  next_restart_at: Date | null;
  last_failure: string | null;
  slot_waiting_since: Date | null;
  stopped_at: Date | null;
  wake_writes: number | null;
  resumed_at: Date | null;
  last_activity: Date | null;
  capture_speed: CaptureSpeed;
  speed_since: Date | null;
  /** messages of the project in the last CAPTURE_SPEED_WINDOW, counted up to recentMessagesCap (capture-speed.ts) */
  recent_messages: number;
  /** projects.database_url_enc (ProjectDatabases.open), for the slot read */
  database_url_enc: Buffer;
}

/** Backoff before the restart that follows `restarts` restarts in a row. */
export function restartBackoffMs(restarts: number, maxMs: number): number {
  if (restarts <= 0) return 0;
  return Math.min(maxMs, FIRST_BACKOFF_MS * 2 ** Math.min(restarts - 1, 30));
}

function failed(s: ConnectorStatus): { failed: boolean; trace?: string } {
  const task = s.tasks.find((t) => t.state === 'FAILED');
  if (s.connector === 'FAILED') return { failed: true, trace: s.connectorTrace ?? task?.trace };
  if (task) return { failed: true, trace: task.trace ?? `task ${task.id} failed` };
  return { failed: false };
}

const running = (s: ConnectorStatus) => s.connector === 'RUNNING' && s.tasks.length > 0 && s.tasks.every((t) => t.state === 'RUNNING');

export class ConnectorSupervisor {
  readonly #ctx: Ctx;
  readonly #log;
  #lock: pg.PoolClient | null = null;
  #checks = 0;
  /** speed changes left in this check: each restarts a task, so a crowd crossing a threshold together is spread over checks */
  #speedSwitches = 0;
  #connectDown = false;
  readonly #holder = `${hostname()}:${process.pid}`;

  /** idle slots advanced in the background, never in the way of a wake (idle-capture.ts, step 6) */
  readonly #advancer: IdleSlotAdvancer;
  /** resumes started by wake checks, in the background (wake.ts) */
  readonly #resumer: WakeResumer;

  constructor(ctx: Ctx) {
    this.#ctx = ctx;
    this.#log = ctx.log.child({ component: 'supervisor' });
    this.#advancer = new IdleSlotAdvancer(ctx, this.#log);
    this.#resumer = new WakeResumer(ctx, this.#log, this.#advancer);
  }

  get leading(): boolean {
    return this.#lock !== null;
  }

  /** One check: take (or keep) the lock, then look at every connector. Never throws. */
  async check(): Promise<void> {
    try {
      if (!(await this.#lead())) return;
      await this.#supervise();
    } catch (err) {
      this.#log.warn({ err }, 'connector check failed; the next one tries again');
    }
  }

  /** Starts resuming idle projects' connectors whose database was written to (wake.ts). Never throws. */
  async wake(): Promise<void> {
    if (!this.#lock) return;
    try {
      await wakeIdleProjects(this.#ctx, this.#advancer, this.#resumer);
    } catch (err) {
      this.#log.warn({ err }, 'waking idle connectors failed; the next check tries again');
    } finally {
      // the lock was lost while this wake ran (a check found its session gone, and cleared the
      // advancer): what this wake opened or queued meanwhile goes too
      if (!this.#lock) {
        this.#resumer.clear();
        await this.#advancer.clear();
      }
    }
  }

  async release(): Promise<void> {
    // Resumes not started are dropped; those under way may finish (each claims its row only if it
    // is still in the idle period its check saw, so one beside another supervisor is harmless),
    // for up to 10 s: one held by a lock in the project's database must not hold the stop.
    this.#resumer.clear();
    await this.#resumer.idle(10_000);
    await this.#advancer.clear();
    const c = this.#lock;
    this.#lock = null;
    if (!c) return;
    await c.query('select pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    c.off('error', ignore);
    c.release();
  }

  async #lead(): Promise<boolean> {
    if (this.#lock) {
      try {
        // doubles as the liveness check of the lock's session
        await this.#lock.query(`insert into connector_supervisor (id, holder, checked_at) values (1, $1, now()) on conflict (id) do update set holder = $1, checked_at = now()`, [this.#holder]);
        return true;
      } catch (err) {
        this.#log.warn({ err }, 'lost the supervisor lock with the control database connection; taking it again when the database is back');
        const c = this.#lock;
        this.#lock = null;
        c.release(true);
        this.#resumer.clear();
        await this.#advancer.clear();
        return false;
      }
    }
    const c = await this.#ctx.db.connect();
    // a connection that breaks while held must not take the process down; the next check notices.
    // Taken off when the connection goes back to the pool: a process that does not lead tries
    // every check, and the pool hands it the same connections (one listener more each time)
    c.on('error', ignore);
    try {
      const ok = (await c.query('select pg_try_advisory_lock($1) as ok', [LOCK_KEY])).rows[0].ok as boolean;
      if (!ok) {
        c.off('error', ignore);
        c.release();
        return false;
      }
    } catch (err) {
      c.release(true);
      throw err;
    }
    this.#lock = c;
    this.#log.info('this process supervises the outbox connectors');
    return this.#lead();
  }

  async #supervise(): Promise<void> {
    const ctx = this.#ctx;
    const rows = (
      await ctx.db.query<Row>(
        `select p.ref, p.connector_name as connector, s.state, coalesce(s.restarts, 0) as restarts, coalesce(s.total_restarts, 0) as total_restarts,
                s.last_restart_at, s.next_restart_at, s.last_failure, s.slot_waiting_since, s.stopped_at, s.wake_writes, s.resumed_at,
                greatest(p.outbox_enabled_at, s.resumed_at,
                         (select d.created_at from deliveries d where d.project_ref = p.ref order by d.created_at desc limit 1)) as last_activity,
                coalesce(s.capture_speed, 'fast') as capture_speed, s.speed_since,
                (select count(*)::int from (select from deliveries d where d.project_ref = p.ref and d.created_at > now() - make_interval(secs => $1) limit $2) r) as recent_messages,
                p.database_url_enc
           from projects p left join connector_supervision s on s.project_ref = p.ref
          where p.outbox_enabled_at is not null and p.connector_name is not null`,
        [ctx.cfg.CAPTURE_SPEED_WINDOW / 1000, recentMessagesCap(ctx.cfg)],
      )
    ).rows;
    let statuses: Map<string, ConnectorStatus>;
    try {
      statuses = await ctx.connect.statuses();
      if (this.#connectDown) this.#log.info('Kafka Connect answers again; supervising the connectors');
      this.#connectDown = false;
    } catch (err) {
      if (!this.#connectDown) this.#log.warn({ err: (err as Error).message }, 'Kafka Connect does not answer; connectors are supervised again when it does (capture waits meanwhile)');
      this.#connectDown = true;
      return;
    }

    const counts: Record<SupervisedState, number> = { running: 0, restarting: 0, failing: 0, waiting_for_database: 0, missing: 0, idle: 0 };
    const quiet = (r: Row) => r.state === 'idle' && statuses.get(r.connector)?.connector === 'STOPPED';
    const readSlots = this.#checks++ % SLOT_EVERY === 0 || rows.some((r) => !quiet(r) && (!statuses.has(r.connector) || !running(statuses.get(r.connector)!)));
    const slots = readSlots ? await readSlotFigures(ctx, this.#advancer.readers, rows) : null;
    const lags: number[] = [];
    this.#speedSwitches = SPEED_SWITCHES_PER_CHECK;
    for (const row of rows) {
      const { state, lag } = await this.#one(row, statuses.get(row.connector), slots ? slots.get(row.ref) : undefined).catch((err) => {
        this.#log.warn({ err, project: row.ref }, 'checking a connector failed');
        return { state: row.state ?? 'running', lag: null };
      });
      counts[state]++;
      if (lag !== null) lags.push(lag);
    }
    for (const [state, n] of Object.entries(counts)) connectorStates.set({ state }, n);
    if (slots) {
      const values = [...slots.values()].filter((s): s is SlotInfo => !!s && !(s instanceof Error));
      slotRetainedBytesMax.set(Math.max(0, ...values.map((s) => s.retained ?? 0)));
      slotCaptureLagSecondsMax.set(Math.max(0, ...lags));
    }
  }

  /** Decides about one connector and records it; returns its state. */
  async #one(row: Row, status: ConnectorStatus | undefined, slot: SlotInfo | Error | null | undefined): Promise<{ state: SupervisedState; lag: number | null }> {
    const ctx = this.#ctx;
    const now = Date.now();
    const log = this.#log.child({ project: row.ref, connector: row.connector });
    let state: SupervisedState = row.state ?? 'running';
    let { restarts, total_restarts: total } = row;
    let lastRestart = row.last_restart_at;
    let next = row.next_restart_at;
    let failure = row.last_failure;

    let stoppedAt = row.stopped_at;
    let wakeWrites = row.wake_writes;
    let resumedAt = row.resumed_at;
    let speed = row.capture_speed;
    let speedSince = row.speed_since;
    if (status?.connector === 'STOPPED') {
      if (state !== 'idle') {
        // stopped by someone else, or by a supervisor that died between stopping and recording it:
        // nothing would ever wake it, so it runs again. Or a wake resumed it a moment ago and
        // Connect has not applied that yet (wakes run beside checks): resumed again, which is a
        // no-op, and nothing to report
        await ctx.connect.setTarget(row.connector, 'resume');
        const justWoken = row.resumed_at !== null && now - row.resumed_at.getTime() < RESUME_APPLIED_MS;
        if (!justWoken) log.warn('the connector was stopped, not by the supervisor for an idle project; resumed it');
        state = 'running';
        if (!justWoken) resumedAt = new Date(now);
      }
    } else if (!status) {
      // deleted from Connect, or Connect lost its config topic: registered again from the slot
      state = 'missing';
      if (!next || next.getTime() <= now) {
        const r = await refreshProjectOutbox(ctx, row.ref).catch((err) => (log.error({ err }, 'registering the missing connector again failed'), 'failed' as const));
        restarts++;
        total++;
        lastRestart = new Date(now);
        next = new Date(now + restartBackoffMs(restarts, ctx.cfg.CONNECTOR_RESTART_BACKOFF_MAX));
        connectorRestarts.inc({ kind: 'reregistered' });
        if (r !== 'failed') log.warn({ result: r }, 'the connector was missing from Kafka Connect; registered it again from its replication slot (nothing committed is lost)');
        state = 'restarting';
      }
    } else if (running(status)) {
      if (state !== 'running' && state !== 'idle') log.info({ restarts }, 'connector running again');
      // recorded idle, yet running: a wake resumed it after this check read its row (wakes run
      // beside checks), or a wake died between resuming it and recording that. Either way it was
      // resumed just now; its activity read with the row is stale, so it is not judged idle again
      const woken = state === 'idle';
      state = 'running';
      stoppedAt = null;
      if (woken) resumedAt = new Date(now);
      const idleFor = row.last_activity ? now - row.last_activity.getTime() : 0;
      if (!woken && ctx.cfg.CAPTURE_IDLE_AFTER > 0 && restarts === 0 && idleFor >= ctx.cfg.CAPTURE_IDLE_AFTER) {
        // stopped slow, it resumes slow: a project that wakes now and then never restarts its task
        // for its speed (capture-speed.ts); the message that wakes it waits one slow poll
        if (speed === 'fast' && ctx.cfg.CAPTURE_SLOW_POLL > 0 && (await applySpeed(ctx, row.connector, 'slow', templatePollInterval()))) {
          [speed, speedSince] = ['slow', new Date(now)];
          await ctx.connect.waitRunning(row.connector, 30_000).catch(() => undefined);
        }
        const r = await stopIdleConnector(ctx, row.ref, row.connector);
        if (r.stopped) {
          state = 'idle';
          stoppedAt = new Date(now);
          wakeWrites = r.writes;
          log.info({ idle_seconds: Math.round(idleFor / 1000) }, 'no message for CAPTURE_IDLE_AFTER: connector stopped; it resumes at the next write to the database');
        } else {
          resumedAt = new Date(now);
          log.info({ reason: r.reason }, 'connector kept running');
        }
      }
      if (state === 'running' && !woken) [speed, speedSince] = await this.#speed(row, now, log);
      // the backoff counts restarts in a row: it starts from zero once a restart has held a while
      if (restarts > 0 && (!lastRestart || now - lastRestart.getTime() >= STABLE_MS)) {
        restarts = 0;
        next = null;
      }
    } else {
      const f = failed(status);
      if (f.failed) {
        failure = redact(f.trace ?? 'failed', await this.#password(row.ref));
        if (!(await this.#databaseUp(row.ref))) {
          if (state !== 'waiting_for_database') log.warn({ failure }, 'connector failed and its database does not accept connections; it is restarted as soon as the database does');
          state = 'waiting_for_database';
          next = null;
        } else if (!next || next.getTime() <= now) {
          const r = await ctx.connect.restartFailed(row.connector);
          if (r === 'restarted') {
            restarts++;
            total++;
            lastRestart = new Date(now);
            next = new Date(now + restartBackoffMs(restarts, ctx.cfg.CONNECTOR_RESTART_BACKOFF_MAX));
            connectorRestarts.inc({ kind: 'task' });
            const failing = restarts >= ctx.cfg.CONNECTOR_RESTART_REPORT_AFTER;
            state = failing ? 'failing' : 'restarting';
            (failing ? log.error.bind(log) : log.warn.bind(log))(
              { restarts, next_restart_at: next.toISOString(), failure },
              failing ? `connector keeps failing (${restarts} restarts in a row); restarting at the backoff — look at the failure` : 'restarted a failed connector',
            );
          }
        } else if (restarts > 0) {
          // failed again before its backed-off restart is due (a check can land in the moment a
          // restarted task shows RUNNING and record 'running'): restarting or failing, never running
          state = restarts >= ctx.cfg.CONNECTOR_RESTART_REPORT_AFTER ? 'failing' : 'restarting';
        }
      }
      // UNASSIGNED / RESTARTING / PAUSED: Connect is on it; look again at the next check
    }

    // the slot: WAL retained, and since when changes have waited without a consumer
    // null: read, and there is no such slot; undefined: not read at this check
    let slotCols: [number | null, number | null, string | null, number | null, number | null, Date | null] = [null, null, slot === null ? 'missing' : null, null, null, null];
    let lag: number | null = null;
    if (slot && !(slot instanceof Error)) {
      const waiting = !slot.active && (slot.pending ?? 0) > 0;
      const since = waiting ? (row.slot_waiting_since ?? new Date(now)) : null;
      lag = slot.active ? (slot.writeLagSeconds ?? 0) : since ? (now - since.getTime()) / 1000 : 0;
      slotCols = [slot.retained, slot.pending, slot.walStatus, slot.safeWal, lag, since];
      const nearLimit = slot.safeWal !== null && slot.safeWal < ctx.cfg.SLOT_RETAINED_WAL_WARN;
      if ((slot.retained ?? 0) >= ctx.cfg.SLOT_RETAINED_WAL_WARN || nearLimit || slot.walStatus === 'unreserved' || slot.walStatus === 'lost') {
        (slot.walStatus === 'lost' ? log.error.bind(log) : log.warn.bind(log))(
          { retained_bytes: slot.retained, wal_status: slot.walStatus, safe_wal_bytes: slot.safeWal },
          slot.walStatus === 'lost'
            ? 'the replication slot is lost (max_slot_wal_keep_size): changes not captured before are gone; see README, Operations: a lost slot'
            : nearLimit
              ? 'the replication slot is close to max_slot_wal_keep_size: it is invalidated (and what it has not captured lost) when it passes it; is its connector running?'
              : 'the replication slot retains a lot of WAL: is its connector running? (SLOT_RETAINED_WAL_WARN)',
        );
      }
    }
    // not read at this check (undefined), or could not be read: keep what was known
    const keepSlot = slot === undefined || slot instanceof Error;
    // written only when something changed (or the slot was read): a hundred idle projects must
    // not cost the control database a hundred updates every check
    const t = (d: Date | null) => d?.getTime() ?? null;
    const changed =
      row.state !== state || row.restarts !== restarts || row.total_restarts !== total || t(row.last_restart_at) !== t(lastRestart) || t(row.next_restart_at) !== t(next) ||
      row.last_failure !== failure || t(row.stopped_at) !== t(stoppedAt) || (row.wake_writes === null ? null : Number(row.wake_writes)) !== (wakeWrites === null ? null : Number(wakeWrites)) || t(row.resumed_at) !== t(resumedAt) ||
      row.capture_speed !== speed || t(row.speed_since) !== t(speedSince);
    if (!changed && keepSlot) return { state, lag };
    // Written only if the row is still in the state this check read: a wake running beside the
    // check may have resumed the project meanwhile (idle -> running, its only change), and the
    // stale row must not record it idle again (the next wake would resume it once more, the next
    // check stop it). What this check decided from the stale row is then left to the next one.
    const written = await ctx.db.query(
      `insert into connector_supervision as s (project_ref, connector, state, restarts, total_restarts, last_restart_at, next_restart_at, last_failure,
                                              slot_retained_bytes, slot_pending_bytes, slot_wal_status, slot_safe_wal_bytes, capture_lag_seconds, slot_waiting_since,
                                              stopped_at, wake_writes, resumed_at, capture_speed, speed_since, checked_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $16, $17, $18, $19, $20, now())
       on conflict (project_ref) do update set connector = $2, state = $3, restarts = $4, total_restarts = $5, last_restart_at = $6, next_restart_at = $7,
         last_failure = $8, checked_at = now(), stopped_at = $16, wake_writes = $17, resumed_at = $18, capture_speed = $19, speed_since = $20,
         slot_retained_bytes = case when $15 then s.slot_retained_bytes else $9 end,
         slot_pending_bytes = case when $15 then s.slot_pending_bytes else $10 end,
         slot_wal_status = case when $15 then s.slot_wal_status else $11 end,
         slot_safe_wal_bytes = case when $15 then s.slot_safe_wal_bytes else $12 end,
         capture_lag_seconds = case when $15 then s.capture_lag_seconds else $13 end,
         slot_waiting_since = case when $15 then s.slot_waiting_since else $14 end
       where s.state is not distinct from $21`,
      [row.ref, row.connector, state, restarts, total, lastRestart, next, failure, ...slotCols, keepSlot, stoppedAt, wakeWrites, resumedAt, speed, speedSince, row.state],
    );
    if (written.rowCount === 0) {
      // only a wake changes a row beside a check, and only from idle to running
      log.debug({ read: row.state }, 'the row changed during the check (a wake resumed the project); the next check looks again');
      return { state: 'running', lag };
    }
    return { state, lag };
  }

  /** The speed of a running connector (capture-speed.ts): changed when its traffic says so. */
  async #speed(row: Row, now: number, log: { info: (o: object, m: string) => void }): Promise<[CaptureSpeed, Date | null]> {
    // a connector first seen running, or just resumed, is at its speed from now
    const since = row.speed_since && (!row.resumed_at || row.speed_since >= row.resumed_at) ? row.speed_since : row.resumed_at ?? new Date(now);
    const want = wantedSpeed(this.#ctx.cfg, row.capture_speed, row.recent_messages, now - since.getTime());
    if (want === row.capture_speed || this.#speedSwitches <= 0) return [row.capture_speed, since];
    this.#speedSwitches--;
    if (!(await applySpeed(this.#ctx, row.connector, want, templatePollInterval()))) return [row.capture_speed, since];
    log.info({ speed: want, recent_messages: row.recent_messages, window_seconds: this.#ctx.cfg.CAPTURE_SPEED_WINDOW / 1000 }, want === 'slow' ? 'few messages: the connector reads its stream every CAPTURE_SLOW_POLL' : 'traffic picked up: the connector reads its stream every 10 ms again');
    return [want, new Date(now)];
  }

  /**
   * Whether the project's database accepts connections now: a new connection, as Debezium's
   * restarted task will open (a pooled one may have survived what new ones are refused).
   */
  async #databaseUp(ref: string): Promise<boolean> {
    const c = new pg.Client({ connectionString: await this.#ctx.projectDbs.url(ref), connectionTimeoutMillis: 3_000, application_name: 'integrations:supervisor', options: `-c search_path=${OWN_SEARCH_PATH}` });
    c.on('error', () => {});
    try {
      await c.connect();
      await c.query('select 1');
      return true;
    } catch {
      return false;
    } finally {
      await c.end().catch(() => {});
    }
  }

  async #password(ref: string): Promise<string | undefined> {
    try {
      return decodeURIComponent(new URL(await this.#ctx.projectDbs.url(ref)).password) || undefined;
    } catch {
      return undefined;
    }
  }
}

function ignore(): void {}

function redact(text: string, password: string | undefined): string {
  return password ? text.split(password).join('[redacted]') : text;
}

/**
 * Runs the supervisor every CONNECTOR_SUPERVISE_INTERVAL, and the wake check every
 * CAPTURE_WAKE_INTERVAL, until stopped (dispatcher role). Each runs one at a time, but the two run
 * beside each other: a check (a hundred connectors, Connect's statuses, the slots) takes long
 * enough on a loaded machine that a wake waiting behind it was the tail of the wake's latency (run
 * D, docs/benchmark.md: commit -> resume p99 752 ms against p50 187). They share the lock and the
 * statistics readers; a check that read a row before a wake changed it does not write it back
 * (#one), and one that finds a connector resumed under an idle row counts it as just resumed.
 */
export function startConnectorSupervisor(ctx: Ctx): { name: string; supervisor: ConnectorSupervisor; stop(): Promise<void> } {
  const supervisor = new ConnectorSupervisor(ctx);
  const every = (ms: number, run: () => Promise<void>) => {
    let current: Promise<void> | null = null;
    const tick = () => {
      current ??= run().finally(() => (current = null));
    };
    const timer = setInterval(tick, ms);
    timer.unref();
    return { tick, stop: () => (clearInterval(timer), current) };
  };
  const checks = every(ctx.cfg.CONNECTOR_SUPERVISE_INTERVAL, () => supervisor.check());
  // waking is cheap (one query per cluster) and frequent
  const wakes = every(ctx.cfg.CAPTURE_WAKE_INTERVAL, () => supervisor.wake());
  checks.tick();
  return {
    name: 'supervisor',
    supervisor,
    async stop() {
      await Promise.all([checks.stop(), wakes.stop()]);
      await supervisor.release();
    },
  };
}
