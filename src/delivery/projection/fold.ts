// The deliveries projection: folds delivery events into `deliveries` and `delivery_attempts`.
// Replay-safe and order-tolerant, so the live projector, a replay after a crash and a full rebuild
// all converge on the same rows:
//   - a delivery row only moves forward in (run, final, attempt); DeliveryQueued is (run, pending, 0).
//     Within a run a final outcome (delivered, dead) is terminal: the same attempt made twice (two
//     processes holding it across a rebalance or a broker restart) can publish a `failed` copy,
//     whose retries go on, beside the final one, in either order; neither that copy nor a later
//     attempt of its retries reopens the run. Between finals of one run, delivered beats dead (the
//     receiver has the message), then the earliest attempt, then the earliest finish;
//   - a delivery is keyed (project, message id): message ids are chosen in the projects' own
//     databases, so two projects may use one id, and each has its own row (migration 103);
//   - an attempt row is keyed (project, delivery, run, attempt): of two copies of one attempt it
//     keeps the stronger outcome (delivered > dead > failed, then the earlier finish), so the
//     history shows one outcome per attempt and agrees with the row;
//   - both orders are total and depend only on the events, so every order of applying them (live,
//     replayed, duplicated, a rebuild beside the live projector) ends in the same rows;
//   - every timestamp comes from the event, never from now(), so a rebuild is identical.
// created_at of a delivery is the message's first enqueue time: the listing's "newest first".
import { withTransaction, type Pool, type PoolClient } from '../../db/index.js';
import { applyCallbackEvents } from './fold-callbacks.js';
import type { DeliveryEvent } from '../events.js';

interface Row {
  id: string;
  project_ref: string;
  kind: string;
  webhook_id: string | null;
  target: string;
  method: string | null;
  callback_function: string | null;
  message_created_at: number;
  run: number;
  attempts: number;
  status: string;
  last_http_status: number | null;
  last_smtp_code: number | null;
  last_error: string | null;
  last_response_body: string | null;
  next_attempt_at: number | null;
  delivered_at: number | null;
  updated_at: number;
  ordering_key: string | null;
  seq: number | null;
}

interface AttemptRow {
  project_ref: string;
  delivery_id: string;
  run: number;
  attempt: number;
  outcome: string;
  http_status: number | null;
  smtp_code: number | null;
  error: string | null;
  response_body: string | null;
  duration_ms: number;
  started_at: number;
  finished_at: number;
}

const isFinal = (status: string) => status === 'delivered' || status === 'dead';

/** Where a delivery row stands in its forward-only order; `positionSql` is the same in SQL. */
function position(r: Pick<Row, 'run' | 'status' | 'attempts' | 'updated_at'>): number[] {
  const final = isFinal(r.status);
  const sign = final ? -1 : 1; // a final: the earliest; before it: the latest
  return [r.run, Number(final), Number(r.status === 'delivered'), sign * r.attempts, sign * r.updated_at];
}

const positionSql = (t: string) => {
  const final = `(${t}.status in ('delivered', 'dead'))`;
  const sign = `(case when ${final} then -1 else 1 end)`;
  return `(${t}.run, ${final}, ${t}.status = 'delivered', ${sign} * ${t}.attempts, ${sign} * extract(epoch from ${t}.updated_at))`;
};

const outcomeRank = (outcome: string) => (outcome === 'delivered' ? 2 : outcome === 'dead' ? 1 : 0);
const attemptPosition = (a: AttemptRow) => [outcomeRank(a.outcome), -a.finished_at];
const attemptPositionSql = (t: string) =>
  `(case ${t}.outcome when 'delivered' then 2 when 'dead' then 1 else 0 end, -extract(epoch from ${t}.finished_at))`;

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

export function fold(events: DeliveryEvent[]): { rows: Row[]; attempts: AttemptRow[] } {
  const rows = new Map<string, Row>();
  const attempts = new Map<string, AttemptRow>();
  for (const ev of events) {
    if (ev.type === 'CallbackInvoked') continue; // fold-callbacks.ts
    const d = ev.data;
    // the row as DeliveryQueued makes it, then an attempt's fields stored over it; not `{ ...base, … }`:
    // on Node 20's V8 a spread followed by more properties costs about a microsecond a property
    // (pipeline.ts, docs/benchmark.md)
    const row: Row = {
      id: d.message_id,
      project_ref: d.project,
      kind: d.kind,
      webhook_id: d.webhook_id,
      target: d.target,
      method: d.method,
      callback_function: d.callback_function,
      message_created_at: d.message_created_at,
      run: d.run,
      ordering_key: d.ordering_key ?? null,
      seq: d.seq ?? null,
      attempts: 0,
      status: 'pending',
      last_http_status: null,
      last_smtp_code: null,
      last_error: null,
      last_response_body: null,
      next_attempt_at: null,
      delivered_at: null,
      updated_at: ev.type === 'DeliveryQueued' ? ev.data.queued_at : ev.data.finished_at,
    };
    if (ev.type === 'DeliveryAttempted') {
      const a = ev.data;
      row.attempts = a.attempt;
      row.status = a.status;
      row.last_http_status = a.http_status;
      row.last_smtp_code = a.smtp_code;
      row.last_error = a.error;
      row.last_response_body = a.response_body;
      row.next_attempt_at = a.next_attempt_at;
      row.delivered_at = a.outcome === 'delivered' ? a.finished_at : null;
      const attempt: AttemptRow = {
        project_ref: a.project,
        delivery_id: a.message_id,
        run: a.run,
        attempt: a.attempt,
        outcome: a.outcome,
        http_status: a.http_status,
        smtp_code: a.smtp_code,
        error: a.error,
        response_body: a.response_body,
        duration_ms: a.duration_ms,
        started_at: a.started_at,
        finished_at: a.finished_at,
      };
      const key = `${a.project}:${a.message_id}:${a.run}:${a.attempt}`;
      const prevAttempt = attempts.get(key);
      if (!prevAttempt || compare(attemptPosition(attempt), attemptPosition(prevAttempt)) > 0) attempts.set(key, attempt);
    }
    const rowKey = `${row.project_ref}:${row.id}`;
    const prev = rows.get(rowKey);
    if (!prev || compare(position(row), position(prev)) > 0) rows.set(rowKey, row);
  }
  // One lock order for every writer (live projector, a rebuild running beside it): no deadlocks.
  // By id, then project (ids of two projects rarely meet), as the upsert orders its rows.
  const byId = (x: { project_ref: string; id: string }, y: { project_ref: string; id: string }) =>
    x.id !== y.id ? (x.id < y.id ? -1 : 1) : x.project_ref < y.project_ref ? -1 : x.project_ref > y.project_ref ? 1 : 0;
  const byKey = (x: AttemptRow, y: AttemptRow) =>
    byId({ project_ref: x.project_ref, id: x.delivery_id }, { project_ref: y.project_ref, id: y.delivery_id }) || x.run - y.run || x.attempt - y.attempt;
  return { rows: [...rows.values()].sort(byId), attempts: [...attempts.values()].sort(byKey) };
}

const ts = (col: string) => `case when ${col} is null then null else to_timestamp(${col} / 1000.0) end`;
// message_created_at is in microseconds; integer arithmetic keeps every digit
const tsMicros = (col: string) => `(timestamptz 'epoch' + ${col} * interval '1 microsecond')`;

/** Columns the forward-only upsert moves to the event's values (the rest are kept or merged below). */
const MOVED = ['target', 'method', 'status', 'run', 'attempts', 'next_attempt_at', 'updated_at'];
/** Columns that keep showing how the previous run ended while a new run is pending (attempts = 0). */
const KEPT_WHILE_PENDING = ['last_http_status', 'last_smtp_code', 'last_error', 'last_response_body'];

/**
 * One statement per batch (plus one for callback outcomes, when there are any): the attempts are
 * upserted in a CTE that returns which of them are new, and each delivery row is written once, its
 * total_attempts raised by the new attempts it got. The forward-only guard applies column by column
 * (`forward`), so a new attempt of a run that already ended (a failed copy's retries) still counts
 * in total_attempts without reopening the run. Before, total_attempts was recounted by a second
 * UPDATE of every row: two heap writes per delivery, and the most expensive statement of the
 * control database (docs/benchmark.md, tuning log).
 */
export async function applyEvents(db: Pool, events: DeliveryEvent[]): Promise<void> {
  if (events.length === 0) return;
  const { rows, attempts } = fold(events);
  // callback events and the rows they belong to are written together; rows alone are one statement
  if (events.some((e) => e.type === 'CallbackInvoked')) {
    await withTransaction(db, async (c) => {
      await writeRows(c, rows, attempts);
      await applyCallbackEvents(c, events);
    });
  } else {
    await writeRows(db, rows, attempts);
  }
}

async function writeRows(client: Pool | PoolClient, rows: ReturnType<typeof fold>['rows'], attempts: ReturnType<typeof fold>['attempts']): Promise<void> {
  if (rows.length > 0) {
    const forward = `${positionSql('d')} < ${positionSql('excluded')}`;
    const moved = MOVED.map((c) => `${c} = case when ${forward} then excluded.${c} else d.${c} end`);
    const kept = KEPT_WHILE_PENDING.map((c) => `${c} = case when ${forward} and excluded.attempts <> 0 then excluded.${c} else d.${c} end`);
    await client.query({
      // named: parsed and planned once per connection
      name: 'projection-apply',
      text: `with fresh as (
         insert into delivery_attempts as a (project_ref, delivery_id, run, attempt, outcome, http_status, smtp_code, error, response_body, duration_ms, started_at, finished_at)
         select project_ref, delivery_id, run, attempt, outcome, http_status, smtp_code, error, response_body, duration_ms, ${ts('started_at')}, ${ts('finished_at')}
           from jsonb_to_recordset($1::jsonb) as x(project_ref text, delivery_id uuid, run int, attempt int, outcome text, http_status int, smtp_code int, error text,
                                                  response_body text, duration_ms int, started_at bigint, finished_at bigint)
         on conflict (project_ref, delivery_id, run, attempt) do update set
           outcome = excluded.outcome, http_status = excluded.http_status, smtp_code = excluded.smtp_code, error = excluded.error,
           response_body = excluded.response_body, duration_ms = excluded.duration_ms, started_at = excluded.started_at,
           finished_at = excluded.finished_at
         where ${attemptPositionSql('a')} < ${attemptPositionSql('excluded')}
         returning a.project_ref, a.delivery_id, (a.xmax = 0) as inserted
       ), added as (
         select project_ref, delivery_id, count(*)::int as n from fresh where inserted group by project_ref, delivery_id
       )
       insert into deliveries as d (id, project_ref, kind, webhook_id, target, method, status, run, attempts, total_attempts, last_http_status, last_smtp_code,
                                    last_error, last_response_body, callback_function, message_created_at, next_attempt_at, delivered_at,
                                    created_at, updated_at, ordering_key, seq)
       select x.id, x.project_ref, kind, webhook_id, target, method, status, run, attempts, coalesce(added.n, 0), last_http_status, last_smtp_code,
              last_error, last_response_body, callback_function, ${tsMicros('message_created_at')}, ${ts('next_attempt_at')}, ${ts('delivered_at')},
              ${tsMicros('message_created_at')}, ${ts('updated_at')}, ordering_key, seq
         from jsonb_to_recordset($2::jsonb) as x(id uuid, project_ref text, kind text, webhook_id uuid, target text, method text, status text,
                                                run int, attempts int, last_http_status int, last_smtp_code int, last_error text,
                                                last_response_body text, callback_function text, message_created_at bigint,
                                                next_attempt_at bigint, delivered_at bigint, updated_at bigint, ordering_key text, seq bigint)
         left join added on added.project_ref = x.project_ref and added.delivery_id = x.id
        -- one lock order for every writer (fold sorts by id, then project; a hash join would not
        -- keep it)
        order by x.id, x.project_ref
       on conflict (project_ref, id) do update set
         ${moved.join(',\n           ')},
         webhook_id = case when ${forward} then coalesce(excluded.webhook_id, d.webhook_id) else d.webhook_id end,
         -- a new run starts pending but keeps showing how the previous one ended
         ${kept.join(',\n           ')},
         delivered_at = case when ${forward} then coalesce(excluded.delivered_at, d.delivered_at) else d.delivered_at end,
         total_attempts = d.total_attempts + excluded.total_attempts,
         ordering_key = coalesce(d.ordering_key, excluded.ordering_key),
         seq = coalesce(d.seq, excluded.seq)
       where ${forward} or excluded.total_attempts > 0`,
      values: [JSON.stringify(attempts), JSON.stringify(rows)],
    });
  }
}
