// Backfills (docs/delivery.md, "Backfills"): the rows already in a webhook's table, sent as events
// of their own type (BACKFILL), in primary-key order, at the backfill's rate, beside live traffic.
//
// One chunk is one transaction in the project database that
//   1. locks the backfill's cursor row (base.backfills, made when the backfill is started), so two
//      processes never run one backfill's chunks at once, and reads the cursor there (never from
//      the control database); no row means cancelled or finished, and nothing is sent;
//   2. reads the next rows after the cursor FOR SHARE, in primary-key order: a row being changed
//      is read once its change has committed (READ COMMITTED re-reads it), and a change that comes
//      after waits for this transaction. So the BACKFILL message of a row and the row's change
//      messages commit in the order of the row's states, and with `ordering: "row"` (required)
//      they share the row's ordering key: a receiver never gets a row's older state after its
//      newer change. lock_timeout is short: the backfill gives way (tries again) rather than ever
//      make an application's transaction wait behind it, or deadlock with it;
//   3. enqueues one message per row (base._webhook_payload / base._webhook_message, the trigger's
//      code: columns, the 1 MB rule, the ordering key) and moves the cursor, in the same commit.
// So a process killed anywhere neither skips nor repeats a row: the next chunk starts at the
// cursor the last commit wrote.
//
// The worker (startBackfills) runs in the dispatcher role. A process takes one running backfill
// at a time under a lease (webhook_backfills.lease_until, renewed each chunk), works on it for a
// slice, then lets the next one have a turn; a lease left by a dead process expires after LEASE_MS.
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { AppContext } from '../context.js';
import { compileFilter, type RowFilter } from './row-filter.js';
import { primaryKeyColumns, refuseUserCode } from './webhook-triggers.js';

export type BackfillState = 'running' | 'paused' | 'done' | 'cancelled' | 'failed';

export interface BackfillJob {
  id: string;
  webhookId: string;
  schema: string;
  table: string;
  /** the table's primary key, in key order */
  keyColumns: string[];
  /** the webhook's payload columns (null: all) */
  columns: string[] | null;
  filter: RowFilter | null;
}

const LEASE_MS = 15_000;
/** how long one process works on one backfill before giving others a turn */
const SLICE_MS = 10_000;
const IDLE_MS = 1_000;
/** consecutive failed chunks after which a backfill ends 'failed' */
const FAIL_AFTER = 10;
const LOCK_TIMEOUT_MS = 200;
/** how often the pipeline's backlog is read (each read is two Kafka admin requests) */
const LAG_EVERY_MS = 1_000;
const YIELD_MS = 500;

const rel = (j: Pick<BackfillJob, 'schema' | 'table'>) => `${pg.escapeIdentifier(j.schema)}.${pg.escapeIdentifier(j.table)}`;

/** The rows a backfill with this filter would send now (an estimate when counting takes longer than 5 s). */
export async function estimateRows(c: pg.ClientBase, j: Pick<BackfillJob, 'schema' | 'table' | 'filter'>): Promise<number> {
  const where = j.filter ? `where ${compileFilter(j.filter, { row: 'new', old: null }).sql}` : '';
  await c.query('begin');
  try {
    await c.query(`set local statement_timeout = '5s'`);
    const r = await c.query(`select count(*)::bigint as n from ${rel(j)} as new ${where}`);
    await c.query('commit');
    return Number(r.rows[0].n);
  } catch (err) {
    await c.query('rollback').catch(() => {});
    if ((err as { code?: string }).code !== '57014') throw err; // query_canceled: the statement timeout
    const r = await c.query(`select greatest(reltuples, 0)::bigint as n from pg_class where oid = $1::regclass`, [rel(j)]);
    return Number(r.rows[0].n);
  }
}

export type ChunkResult = { kind: 'sent'; rows: number; rowsDone: number; done: boolean } | { kind: 'busy' } | { kind: 'gone' };

/** Enqueues the next `limit` rows of a backfill in one transaction (see the top of this file). */
export async function backfillChunk(c: pg.ClientBase, j: BackfillJob, limit: number): Promise<ChunkResult> {
  const keys = j.keyColumns.map((k, i) => ({ col: `new.${pg.escapeIdentifier(k)}`, alias: `k${i}`, lit: pg.escapeLiteral(k), name: k }));
  const keyList = keys.map((k) => k.col).join(', ');
  await c.query('begin');
  try {
    await c.query(`set local lock_timeout = '${LOCK_TIMEOUT_MS}ms'`);
    // to_jsonb below runs a type's cast to json, and the cursor's jsonb_populate_record a domain's
    // check, on this connection: refused when that is the database users' code (base._user_code_in)
    await refuseUserCode(c, j.schema, j.table, true);
    const cur = await c.query('select cursor, rows_done from base.backfills where id = $1 for update', [j.id]);
    if (!cur.rows[0]) {
      // cancelled (the API drops the cursor) or finished: never start again from the first row
      await c.query('rollback');
      return { kind: 'gone' };
    }
    const cursor = cur.rows[0].cursor as Record<string, unknown> | null;
    const params: unknown[] = [j.webhookId, j.schema, j.table, j.columns ? JSON.stringify(j.columns) : null, limit];
    const where: string[] = [];
    if (cursor) {
      const at = params.push(JSON.stringify(cursor));
      where.push(`(${keyList}) > (select ${keys.map((k) => `c.${pg.escapeIdentifier(k.name)}`).join(', ')} from jsonb_populate_record(null::${rel(j)}, $${at}) c)`);
    }
    if (j.filter) where.push(compileFilter(j.filter, { row: 'new', old: null }).sql);
    const r = await c.query(
      `with picked as (
         select ${keys.map((k) => `${k.col} as ${k.alias}`).join(', ')}, to_jsonb(new) as row_json
           from ${rel(j)} as new ${where.length ? `where ${where.join(' and ')}` : ''}
          order by ${keyList} limit $5
            for share of new
       ), sent as (
         select ${keys.map((k) => `p.${k.alias}`).join(', ')}, p.row_json,
                base._webhook_message($1, base._webhook_payload($1, 'BACKFILL', $2, $3, p.row_json, null, $4::jsonb),
                                      'row:' || $1 || ':' || jsonb_build_array(${keys.map((k) => `p.row_json -> ${k.lit}`).join(', ')})::text) as id
           from picked p
       )
       select (select count(*) from sent)::int as n,
              (select jsonb_build_object(${keys.map((k) => `${k.lit}, s.row_json -> ${k.lit}`).join(', ')})
                 from sent s order by ${keys.map((k) => `s.${k.alias} desc`).join(', ')} limit 1) as last`,
      params,
    );
    const n = r.rows[0].n as number;
    let rowsDone = Number(cur.rows[0].rows_done);
    if (n > 0) {
      const u = await c.query('update base.backfills set cursor = $2, rows_done = rows_done + $3, updated_at = now() where id = $1 returning rows_done', [j.id, r.rows[0].last, n]);
      rowsDone = Number(u.rows[0].rows_done);
    }
    await c.query('commit');
    return { kind: 'sent', rows: n, rowsDone, done: n < limit };
  } catch (err) {
    await c.query('rollback').catch(() => {});
    // a row (or the cursor) is locked by someone else right now: give way, try again shortly
    if ((err as { code?: string }).code === '55P03') return { kind: 'busy' };
    throw err;
  }
}

/** A new backfill's cursor row in the project database, before its first row. */
export async function createBackfillCursor(c: pg.ClientBase, id: string): Promise<void> {
  await c.query('insert into base.backfills (id) values ($1)', [id]);
}

/** The backfill's cursor row in the project database: gone once it has ended. */
export async function dropBackfillCursor(c: pg.ClientBase, id: string): Promise<void> {
  await c.query('delete from base.backfills where id = $1', [id]);
}

type Ctx = Pick<AppContext, 'db' | 'log' | 'cfg' | 'projectDbs' | 'kafka' | 'topics' | 'groups'>;

interface Claimed {
  id: string;
  project_ref: string;
  webhook_id: string;
  filter: RowFilter | null;
  rate: number;
}

/** The dispatcher role's backfill worker (see the top of this file). */
export function startBackfills(ctx: Ctx): { name: string; stop(): Promise<void> } {
  const me = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const log = ctx.log.child({ component: 'backfill' });
  let stopped = false;
  let wake: (() => void) | null = null;
  const sleep = (ms: number) =>
    new Promise<void>((r) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        wake = null;
        r();
      }
      wake = done;
    });

  async function claim(): Promise<Claimed | null> {
    const r = await ctx.db.query(
      `update webhook_backfills b set lease_owner = $1, lease_until = now() + $2 * interval '1 millisecond'
        where b.id = (select id from webhook_backfills
                       where state = 'running' and (lease_until is null or lease_until < now() or lease_owner = $1)
                       order by updated_at limit 1 for update skip locked)
       returning b.id, b.project_ref, b.webhook_id, b.filter, b.rate`,
      [me, LEASE_MS],
    );
    return r.rows[0] ?? null;
  }

  /** Ends (or gives up) a backfill's turn; returns its state as the control database has it now. */
  async function report(b: Claimed, set: string, values: unknown[]): Promise<BackfillState | null> {
    const r = await ctx.db.query(
      `update webhook_backfills set ${set}, updated_at = now() where id = $1 and lease_owner = $2 returning state`,
      [b.id, me, ...values],
    );
    return r.rows[0]?.state ?? null;
  }

  async function run(b: Claimed): Promise<void> {
    const w = await ctx.db.query('select schema_name, table_name, columns, enabled, ordering from webhooks where id = $1 and project_ref = $2', [b.webhook_id, b.project_ref]);
    const hook = w.rows[0];
    if (!hook) return; // deleted: the cascade removes the backfill too
    if (hook.ordering !== 'row') {
      await report(b, `state = 'failed', finished_at = now(), last_error = $3`, ['the webhook\'s ordering is no longer "row": a backfill needs it']);
      return;
    }
    if (!hook.enabled) {
      // its messages would end dead unsent: wait, keeping the cursor, until it is enabled again
      await report(b, `lease_until = now(), waiting = $3`, ['the webhook is disabled']);
      return;
    }
    const pool = await ctx.projectDbs.pool(b.project_ref);
    const c = await pool.connect();
    try {
      const job: BackfillJob = { id: b.id, webhookId: b.webhook_id, schema: hook.schema_name, table: hook.table_name, keyColumns: await primaryKeyColumns(c, hook.schema_name, hook.table_name), columns: hook.columns, filter: b.filter };
      if (job.keyColumns.length === 0) {
        await report(b, `state = 'failed', finished_at = now(), last_error = $3`, [`${job.schema}.${job.table} has no primary key any more`]);
        return;
      }
      const limit = Math.max(1, Math.min(ctx.cfg.BACKFILL_CHUNK, b.rate));
      const until = Date.now() + SLICE_MS;
      while (!stopped && Date.now() < until) {
        const why = await mustWait(b);
        if (why) {
          // keep the lease (and say why in the progress), check again shortly
          const st = await report(b, `lease_until = now() + ${LEASE_MS} * interval '1 millisecond', waiting = $3`, [why]);
          if (st !== 'running') return;
          await sleep(YIELD_MS);
          continue;
        }
        const started = Date.now();
        let res: ChunkResult;
        try {
          res = await backfillChunk(c, job, limit);
        } catch (err) {
          const msg = (err as Error).message;
          log.warn({ err, backfill: b.id, project: b.project_ref }, 'backfill chunk failed; trying again');
          const st = await report(
            b,
            `errors = errors + 1, errors_in_a_row = errors_in_a_row + 1, last_error = $3, lease_until = now(),
             state = case when errors_in_a_row + 1 >= ${FAIL_AFTER} and state = 'running' then 'failed' else state end,
             finished_at = case when errors_in_a_row + 1 >= ${FAIL_AFTER} and state = 'running' then now() else finished_at end`,
            [msg.slice(0, 500)],
          );
          if (st === 'failed') await dropBackfillCursor(c, b.id).catch(() => {});
          return;
        }
        if (res.kind === 'busy') {
          await sleep(LOCK_TIMEOUT_MS);
          continue;
        }
        if (res.kind === 'gone') {
          await report(b, `state = case when state in ('running', 'paused') then 'failed' else state end, last_error = coalesce(last_error, $3), lease_until = now()`, ["its cursor is missing from the project database (base.backfills)"]);
          return;
        }
        // paced: `rate` rows a second, this chunk's time included
        const wait = Math.max(0, (res.rows / b.rate) * 1000 - (Date.now() - started));
        const perSecond = res.rows / Math.max(0.001, (Date.now() - started + wait) / 1000);
        const st = await report(
          b,
          res.done
            ? `rows_done = $3, rows_per_second = coalesce($4::float8, rows_per_second), errors_in_a_row = 0, waiting = null, state = case when state in ('running', 'paused') then 'done' else state end, finished_at = coalesce(finished_at, now()), lease_until = now()`
            : `rows_done = $3, rows_per_second = coalesce($4::float8, rows_per_second), errors_in_a_row = 0, waiting = null, lease_until = now() + ${LEASE_MS} * interval '1 millisecond'`,
          // a last, empty chunk says nothing of the rate: the one before stays
          [res.rowsDone, res.rows > 0 ? perSecond : null],
        );
        if (res.done) {
          log.info({ backfill: b.id, project: b.project_ref, rows: res.rowsDone }, 'backfill done');
          await dropBackfillCursor(c, b.id);
          return;
        }
        if (st !== 'running') {
          if (st === 'cancelled') await dropBackfillCursor(c, b.id);
          return; // paused, cancelled (or the lease was lost): stop here, the cursor is kept
        }
        if (wait > 0) await sleep(wait);
      }
      await report(b, 'lease_until = now()', []);
    } finally {
      c.release();
    }
  }

  // Backpressure: the rate is a ceiling. A backfill also waits while the dispatchers are behind on
  // the outbox topic by more than BACKFILL_MAX_LAG records (what they have not finished, live
  // messages included), and while its webhook's circuit is not closed: its rows would only queue
  // ahead of live messages, or be held.
  const admin = ctx.kafka.admin();
  let adminUp: Promise<void> | null = null;
  let lagAt = 0;
  let lag = 0;
  async function outboxLag(): Promise<number> {
    if (Date.now() - lagAt < LAG_EVERY_MS) return lag;
    adminUp ??= admin.connect();
    await adminUp;
    const [ends, committed] = await Promise.all([admin.fetchTopicOffsets(ctx.topics.outbox), admin.fetchOffsets({ groupId: ctx.groups.dispatcher, topics: [ctx.topics.outbox] })]);
    const done = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    lag = ends.reduce((n, e) => n + Math.max(0, Number(e.high) - Math.max(0, done.get(e.partition) ?? 0)), 0);
    lagAt = Date.now();
    return lag;
  }
  async function mustWait(b: Claimed): Promise<string | null> {
    const open = await ctx.db.query(`select 1 from endpoint_health where project_ref = $1 and endpoint = $2 and state <> 'closed'`, [b.project_ref, `webhook:${b.webhook_id}`]);
    if (open.rowCount) return "the webhook's endpoint is failing (its circuit is open)";
    const behind = await outboxLag().catch((err) => {
      log.warn({ err }, 'reading the outbox backlog failed; going on at the backfill rate');
      return 0;
    });
    return behind > ctx.cfg.BACKFILL_MAX_LAG ? `the dispatchers are ${behind} messages behind` : null;
  }

  const loop = (async () => {
    while (!stopped) {
      let b: Claimed | null = null;
      try {
        b = await claim();
        if (b) await run(b);
      } catch (err) {
        log.warn({ err, backfill: b?.id }, 'backfill turn failed; trying again');
      }
      if (!stopped) await sleep(b ? 0 : IDLE_MS);
    }
  })();

  return {
    name: 'backfills',
    async stop() {
      stopped = true;
      wake?.();
      await loop;
      if (adminUp) await admin.disconnect().catch(() => {});
    },
  };
}
