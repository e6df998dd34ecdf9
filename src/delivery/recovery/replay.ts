// Manual retry and bulk replay: puts dead or failed deliveries back on the log as a new run.
//
//   1. The deliveries table is the index: it picks the deliveries (project, status, time range on
//      the enqueue time, webhook, target host) and their current run.
//   2. The messages themselves are read back from the log (log-read.ts): dead ones from the dead
//      topic, failed ones (a retry is scheduled) from the retry topics, from shortly before their
//      last update, records of this project only (another project may use the same message id).
//      Nothing is rebuilt from the table, so what is sent again is what SQL enqueued.
//   3. The old run is closed in the ledger (a final 'superseded' row, keyed with the project), so a
//      retry of it still waiting on the ladder is skipped. That row is also the claim on the run:
//      two retries of one run at once (a double click, two operators, a replay beside a retry)
//      both write it, the second waits for the first's transaction and finds it there, and only
//      the first enqueues (the second's run is counted in `taken`). The transaction commits after
//      the produce below: a produce that fails leaves the run closed by nobody, retryable again
//      (a crash after the produce and before the commit can send the new run twice, at least
//      once as ever). Then each message is produced to the
//      outbox topic with run + 1, attempt 1, due now and run-started-at = now (a new run has the
//      whole budget again: MAX_ATTEMPTS attempts and MAX_MESSAGE_AGE from now), and a
//      DeliveryQueued event makes the delivery `pending` at once.
//   4. Ordered messages (ordering/keys.ts) keep their key's order: one with a later message of its
//      key delivered, or on its way while this one is not the key's head, is not sent again
//      (`superseded`): the receiver would get an older state after a newer one. One that may go is produced keyed by its
//      key, so it meets the key's other messages in one partition and waits behind its head, if any;
//      a failed head retried by hand stays the head, with its new run.
import type { AppContext } from '../../context.js';
import { encodeEvent } from '../events.js';
import { readBack } from './log-read.js';
import { encodeMessage, type OutboxMessage } from '../message.js';
import { supersedeRuns } from '../ledger.js';
import { withTransaction, type PoolClient } from '../../db/index.js';

export type ReplayStatus = 'dead' | 'failed';

export interface ReplayFilter {
  statuses: ReplayStatus[];
  /** enqueue time range [since, until) */
  since?: Date;
  until?: Date;
  webhookId?: string;
  /** target host (http and webhook deliveries whose URL as written has this host) */
  host?: string;
  ids?: string[];
}

export interface ReplayResult {
  matched: number;
  replayed: number;
  /** ordered deliveries not sent again: a later message of their key was delivered or is on its way */
  superseded: string[];
  /** deliveries whose message was no longer on the log (retention) and could not be replayed */
  not_found: string[];
  /** deliveries whose run another retry or replay took first (it enqueued the new run) */
  taken: string[];
  runs: Record<string, number>;
}

interface Row {
  id: string;
  run: number;
  status: ReplayStatus;
  kind: string;
  target: string;
  method: string | null;
  webhook_id: string | null;
  callback_function: string | null;
  created_micros: string;
  updated_ms: string;
  ordering_key: string | null;
  seq: string | null;
  superseded: boolean;
}

const READ_BACK_MARGIN_MS = 5 * 60_000;
const PRODUCE_BATCH = 500;

export function targetHost(target: string): string | null {
  try {
    const u = new URL(target);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.hostname.replace(/^\[|\]$/g, '').toLowerCase() : null;
  } catch {
    return null;
  }
}

export async function replayDeliveries(
  ctx: AppContext,
  ref: string,
  filter: ReplayFilter,
  progress?: (phase: 'reading' | 'enqueueing', done: number, total: number) => void,
): Promise<ReplayResult> {
  const params: unknown[] = [ref, filter.statuses];
  const where = ['d.project_ref = $1', 'd.status = any($2::text[])'];
  if (filter.since) where.push(`d.created_at >= $${params.push(filter.since)}`);
  if (filter.until) where.push(`d.created_at < $${params.push(filter.until)}`);
  if (filter.webhookId) where.push(`d.webhook_id = $${params.push(filter.webhookId)}`);
  if (filter.ids) where.push(`d.id = any($${params.push(filter.ids)}::uuid[])`);
  const r = await ctx.db.query<Row>(
    `select d.id, d.run, d.status, d.kind, d.target, d.method, d.webhook_id, d.callback_function, d.ordering_key, d.seq::text,
            ((extract(epoch from d.message_created_at) * 1000000)::bigint)::text as created_micros,
            ((extract(epoch from d.updated_at) * 1000)::bigint)::text as updated_ms,
            -- a later message of the key delivered, or on its way while this one is not the key's
            -- head (a head's later messages wait behind it, whatever its run)
            (d.ordering_key is not null and exists (
               select 1 from deliveries l
                where l.project_ref = d.project_ref and l.ordering_key = d.ordering_key and l.seq > d.seq
                  and (l.status = 'delivered' or (l.status <> 'dead' and not exists (
                        select 1 from ordering_heads h where h.project_ref = d.project_ref and h.ordering_key = d.ordering_key and h.message_id = d.id))))) as superseded
       from deliveries d where ${where.join(' and ')}`,
    params,
  );
  const host = filter.host?.replace(/^\[|\]$/g, '').toLowerCase();
  const all = host ? r.rows.filter((x) => targetHost(x.target) === host) : r.rows;
  const rows = all.filter((x) => !x.superseded);
  const result: ReplayResult = { matched: all.length, replayed: 0, superseded: all.filter((x) => x.superseded).map((x) => x.id), not_found: [], taken: [], runs: {} };
  if (rows.length === 0) return result;

  const topics = [
    ...(rows.some((x) => x.status === 'dead') ? [ctx.topics.dead] : []),
    ...(rows.some((x) => x.status === 'failed') ? ctx.topics.retry.map((t) => t.topic) : []),
  ];
  const since = Math.min(...rows.map((x) => Number(x.updated_ms))) - READ_BACK_MARGIN_MS;
  const found = await readBack(ctx, {
    topics,
    project: ref,
    wanted: new Map(rows.map((x) => [x.id, x.run])),
    since,
    progress: progress && ((d, t) => progress('reading', d, t)),
  });

  const ready: { row: Row; msg: OutboxMessage }[] = [];
  for (const row of rows) {
    const msg = found.get(row.id);
    if (msg) ready.push({ row, msg });
    else result.not_found.push(row.id);
  }
  for (let i = 0; i < ready.length; i += PRODUCE_BATCH) {
    const chunk = ready.slice(i, i + PRODUCE_BATCH);
    const taken = await withTransaction(ctx.db, (tx) => requeue(ctx, tx, ref, chunk));
    for (const { row } of chunk) {
      if (taken.has(row.id)) result.taken.push(row.id);
      else {
        result.replayed++;
        result.runs[row.id] = row.run + 1;
      }
    }
    progress?.('enqueueing', result.replayed, ready.length);
  }
  if (result.not_found.length > 0) ctx.log.warn({ project: ref, not_found: result.not_found.length }, 'some deliveries could not be read back from the log');
  return result;
}

/** Enqueues the chunk's new runs in `tx`; returns the ids whose run another retry took first (not enqueued). */
async function requeue(ctx: AppContext, tx: PoolClient, ref: string, all: { row: Row; msg: OutboxMessage }[]): Promise<Set<string>> {
  const ended = await supersedeRuns(tx, ref, all.map((c) => c.row));
  const taken = new Set(all.filter((c) => !ended.has(`${c.row.id}:${c.row.run}`)).map((c) => c.row.id));
  const chunk = all.filter((c) => !taken.has(c.row.id));
  if (chunk.length === 0) return taken;
  // a head retried by hand stays its key's head with the new run (in the transaction that closes
  // its old run: the ordering sweep would otherwise take the closed run for the head's end and let
  // the key go)
  const heads = chunk.filter((c) => c.msg.orderingKey);
  if (heads.length > 0) {
    await tx.query(
      `update ordering_heads h set run = x.run + 1 from unnest($2::uuid[], $3::int[]) as x(id, run)
        where h.project_ref = $1 and h.message_id = x.id and h.run = x.run`,
      [ref, heads.map((c) => c.row.id), heads.map((c) => c.row.run)],
    );
  }
  const now = Date.now();
  await ctx.producer.send({
    topic: ctx.topics.outbox,
    acks: -1,
    messages: chunk.map(({ row, msg }) => encodeMessage(msg, { run: row.run + 1, attempt: 1, dueAt: 0 }, { 'run-started-at': String(now) })),
  });
  // From here the new run is on the log: the claim must commit whatever else happens, or the old
  // run would stay open beside it (its scheduled retry sent too, and a later retry a third copy).
  // The event only makes the listing show `pending` at once; the run's outcome events fix the
  // listing without it (review, 2026-11-29).
  const queued = chunk.map(({ row, msg }) =>
    encodeEvent({
      type: 'DeliveryQueued',
      data: {
        message_id: row.id,
        project: msg.project,
        kind: row.kind,
        run: row.run + 1,
        webhook_id: row.webhook_id,
        target: row.target,
        method: row.method,
        callback_function: row.callback_function,
        message_created_at: Number(row.created_micros),
        queued_at: now,
        ordering_key: msg.orderingKey ?? null,
        seq: msg.seq ?? null,
      },
    }),
  );
  await ctx.producer
    .send({ topic: ctx.topics.events, acks: -1, messages: queued })
    .catch((err) => ctx.log.warn({ err, project: ref, deliveries: chunk.length }, 'the new runs are enqueued; their DeliveryQueued events were not written (the listing shows pending once the runs have outcomes)'));
  return taken;
}
