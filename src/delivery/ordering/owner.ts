// What an owner sees of ordered delivery and how they unblock a key (Management API,
// src/management/ordering.ts): the blocked keys of a project, and skipping a key's head, which ends
// that message dead ("skipped by the owner") and lets the next message of the key go.
import type { AppContext } from '../../context.js';
import { encodeEvent } from '../events.js';
import { recordLedger } from '../ledger.js';
import { OrderingStore } from './keys.js';

export interface BlockedKey {
  ordering_key: string;
  webhook_id: string | null;
  since: string;
  head: { message_id: string; run: number; seq: number; reason: string; since: string };
  queued: number;
}

/** The project's blocked keys, longest blocked first, keyset-paged on (since, key). */
export async function listBlockedKeys(db: AppContext['db'], ref: string, limit: number, after?: { since: string; key: string }): Promise<{ keys: BlockedKey[]; next: { since: string; key: string } | null }> {
  const params: unknown[] = [ref];
  const where = ['h.project_ref = $1'];
  if (after) where.push(`(h.since, h.ordering_key) > ($${params.push(after.since)}::timestamptz, $${params.push(after.key)})`);
  const r = await db.query(
    `select h.ordering_key, h.message_id, h.run, h.seq, h.reason,
            to_char(h.since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as since,
            to_char(h.head_since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as head_since,
            (select count(*) from ordering_queue q where q.project_ref = h.project_ref and q.ordering_key = h.ordering_key)::int as queued
       from ordering_heads h where ${where.join(' and ')}
      order by h.since, h.ordering_key limit $${params.push(limit + 1)}`,
    params,
  );
  const keys: BlockedKey[] = r.rows.slice(0, limit).map((x) => ({
    ordering_key: x.ordering_key,
    webhook_id: /^row:([0-9a-f-]{36}):/.exec(x.ordering_key)?.[1] ?? null,
    since: x.since,
    head: { message_id: x.message_id, run: x.run, seq: Number(x.seq), reason: x.reason, since: x.head_since },
    queued: x.queued,
  }));
  const last = keys.at(-1);
  return { keys, next: r.rows.length > limit && last ? { since: last.since, key: last.ordering_key } : null };
}

export const SKIPPED = 'skipped by the owner to unblock its ordering key; not attempted again (retry it to send it once more)';

/**
 * Ends the head of `key` dead without another attempt, and lets the key move on. The outcome is
 * published (the delivery shows dead) and written to the ledger as final for the run, so a retry
 * record of the head still on the ladder, or a held copy released later, is skipped, never sent.
 * Null when the key is not blocked.
 */
export async function skipHead(ctx: Pick<AppContext, 'db' | 'log' | 'producer' | 'topics'>, ref: string, key: string): Promise<{ message_id: string; next: 'next' | 'drained' | 'not_head' } | null> {
  const h = await ctx.db.query<{ message_id: string; run: number; seq: string }>(`select message_id, run, seq from ordering_heads where project_ref = $1 and ordering_key = $2`, [ref, key]);
  const head = h.rows[0];
  if (!head) return null;
  const d = (
    await ctx.db.query(
      `select kind, webhook_id, target, method, callback_function, attempts,
              (extract(epoch from message_created_at) * 1000000)::bigint as created_us
         from deliveries where project_ref = $1 and id = $2 and run = $3`,
      [ref, head.message_id, head.run],
    )
  ).rows[0];
  const now = Date.now();
  const attempt = (d?.attempts ?? 0) + 1;
  const ev = encodeEvent({
    type: 'DeliveryAttempted',
    data: {
      message_id: head.message_id,
      project: ref,
      kind: d?.kind ?? 'webhook',
      run: head.run,
      attempt,
      webhook_id: d?.webhook_id ?? null,
      target: d?.target ?? '(unknown)',
      method: d?.method ?? null,
      callback_function: d?.callback_function ?? null,
      message_created_at: Number(d?.created_us ?? now * 1000),
      outcome: 'dead',
      status: 'dead',
      final: true,
      http_status: null,
      smtp_code: null,
      error: SKIPPED,
      response_body: null,
      retry_after_ms: null,
      next_attempt_at: null,
      started_at: now,
      finished_at: now,
      duration_ms: 0,
      ordering_key: key,
      seq: Number(head.seq),
    },
  });
  await ctx.producer.send({ topic: ctx.topics.events, acks: -1, messages: [ev] });
  await recordLedger(ctx.db, [{ project: ref, messageId: head.message_id, run: head.run, attempt, outcome: 'dead', final: true }]);
  const next = await new OrderingStore(ctx).advance(ref, key, head.message_id);
  ctx.log.info({ project: ref, key, message: head.message_id, next }, 'ordering key head skipped by the owner');
  return { message_id: head.message_id, next };
}
