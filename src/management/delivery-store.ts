// Deliveries as the projection holds them (deliveries, delivery_attempts in the control database),
// read for the owner's routes: the list (newest first, keyset-paged), one delivery with its
// attempts, and the state a manual retry starts from. The projector writes these tables
// (src/delivery/projection/); nothing here writes.
import type pg from 'pg';

type Q = Pick<pg.ClientBase, 'query'>;

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'dead';
export type DeliveryKind = 'webhook' | 'http' | 'email';

/** One row of the list (and of the detail, which adds last_response_body). */
export interface DeliveryRow {
  id: string;
  kind: DeliveryKind;
  status: DeliveryStatus;
  target: string;
  method: string | null;
  webhook_id: string | null;
  run: number;
  attempts: number;
  total_attempts: number;
  last_http_status: number | null;
  last_smtp_code: number | null;
  last_error: string | null;
  callback_function: string | null;
  callback_status: string | null;
  callback_error: string | null;
  callback_attempts: number;
  message_created_at: Date;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  updated_at: Date;
  /** created_at as ISO text at microsecond precision: the sort key a page ends at */
  cursor_at: string;
  ordering_key: string | null;
  seq: string | null;
  waiting_for: { message_id: string; since: string } | null;
  test: boolean;
  last_response_body?: string | null;
}

export interface AttemptRow {
  run: number;
  attempt: number;
  outcome: 'delivered' | 'failed' | 'dead';
  http_status: number | null;
  smtp_code: number | null;
  error: string | null;
  response_body: string | null;
  duration_ms: number | null;
  started_at: Date;
  finished_at: Date;
}

/** Where a page starts: after the row with this created_at (ISO text) and id, in list order. */
export interface DeliveryKey {
  at: string;
  id: string;
}

export interface DeliveryFilter {
  status?: string;
  kind?: string;
  /** lower case */
  webhookId?: string;
}

const COLUMNS = `id, kind, status, target, method, webhook_id, run, attempts, total_attempts, last_http_status, last_smtp_code, last_error,
  callback_function, callback_status, callback_error, callback_attempts, message_created_at, next_attempt_at, delivered_at, updated_at,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_at, ordering_key, seq,
  -- queued behind its ordering key's head: which one, and since when the key is blocked
  (select jsonb_build_object('message_id', h.message_id, 'since', to_char(h.since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
     from ordering_queue q join ordering_heads h using (project_ref, ordering_key)
    where q.project_ref = deliveries.project_ref and q.message_id = deliveries.id limit 1) as waiting_for,
  -- sent by POST .../webhooks/{id}/test
  exists (select 1 from webhook_test_events t where t.project_ref = deliveries.project_ref and t.message_id = deliveries.id) as test`;

/**
 * The project's deliveries matching `f`, newest first (created_at, then id), `limit` of them from
 * `after` on; `next` is the key of the last one when more follow, else null.
 */
export async function listDeliveries(q: Q, ref: string, f: DeliveryFilter, limit: number, after?: DeliveryKey): Promise<{ rows: DeliveryRow[]; next: DeliveryKey | null }> {
  const params: unknown[] = [ref];
  const where = ['project_ref = $1'];
  if (f.status) where.push(`status = $${params.push(f.status)}`);
  if (f.kind) where.push(`kind = $${params.push(f.kind)}`);
  if (f.webhookId) where.push(`webhook_id = $${params.push(f.webhookId)}::uuid`);
  if (after) where.push(`(created_at, id) < ($${params.push(after.at)}::timestamptz, $${params.push(after.id)}::uuid)`);
  // one more than asked: whether another page follows
  const r = await q.query<DeliveryRow>(`select ${COLUMNS} from deliveries where ${where.join(' and ')} order by created_at desc, id desc limit $${params.push(limit + 1)}`, params);
  const rows = r.rows.slice(0, limit);
  const last = rows.at(-1);
  return { rows, next: r.rows.length > limit && last ? { at: last.cursor_at, id: last.id } : null };
}

/** One delivery of the project, with its last response body. */
export async function getDelivery(q: Q, ref: string, id: string): Promise<DeliveryRow | undefined> {
  const r = await q.query<DeliveryRow>(`select ${COLUMNS}, last_response_body from deliveries where project_ref = $1 and id = $2`, [ref, id]);
  return r.rows[0];
}

/** Every attempt of a delivery, in order (run, then attempt). */
export async function deliveryAttempts(q: Q, ref: string, deliveryId: string): Promise<AttemptRow[]> {
  const r = await q.query<AttemptRow>(
    `select run, attempt, outcome, http_status, smtp_code, error, response_body, duration_ms, started_at, finished_at
       from delivery_attempts where project_ref = $1 and delivery_id = $2 order by run, attempt`,
    [ref, deliveryId],
  );
  return r.rows;
}

/** The status and run of one delivery of the project (what a manual retry decides on). */
export async function deliveryState(q: Q, ref: string, id: string): Promise<{ status: DeliveryStatus; run: number } | undefined> {
  const r = await q.query<{ status: DeliveryStatus; run: number }>('select status, run from deliveries where project_ref = $1 and id = $2', [ref, id]);
  return r.rows[0];
}
