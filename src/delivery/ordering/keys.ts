// Ordered delivery (docs/delivery.md, "Ordered delivery"): the messages of one ordering key are
// attempted one after the other, in commit order, and a message is not attempted before the
// previous one of its key has a final outcome (delivered or dead).
//
// Two layers keep that promise:
//
//   1. In a dispatcher, a key's messages arrive in commit order in one partition of the outbox topic
//      (Debezium keys them by ordering key), and the dispatch consumer chains them in memory
//      (consume/lanes.ts): the next starts when the previous has finished. When everything is
//      delivered at once, that is all it costs: no statement of its own.
//   2. A message that cannot finish at once (it failed and goes up the retry ladder, or its
//      endpoint holds it) becomes its key's head in `ordering_heads` (block, written before the retry
//      record or the hold, so no later message can slip past), and every later message of the key
//      is queued in `ordering_queue` (park). When the head has a final outcome, `advance` puts the
//      next queued message back on the outbox topic as the new head (or ends the block), in one
//      transaction with the produce. Other keys never wait: a failing key blocks only itself.
//
// `sweep` (every SWEEP_MS in each dispatcher process) advances heads whose final outcome is in the
// ledger but whose advance was cut off (a crash between recording and advancing), and reads the
// gauges. Everything is keyed by project: one project's keys are never another's.
import type { AppContext } from '../../context.js';
import { withTransaction } from '../../db/index.js';
import { orderingAdvances, orderingBlockedKeys, orderingParks, orderingQueuedMessages } from '../../lib/metrics.js';
import { attemptKey, encodeMessage, type OutboxMessage } from '../message.js';
import { alreadyRecorded, doneKey, recordedSql, recordedValues } from '../ledger.js';

export type HeadReason = 'retry' | 'held' | 'next';

/** What the store knows of a key's head before a batch is attempted (null: the key flows). */
export interface Head {
  messageId: string;
}

/** A fetch's check (OrderingStore.check): the attempts already done with, and the heads by lane. */
export interface FetchCheck {
  /** keys of the attempts already done with (ledger.ts: doneKey; read with isDone) */
  recorded: Set<string>;
  heads: Map<string, Head>;
}

/** The ordering fields of a message that has them. */
export type OrderedMessage = OutboxMessage & { orderingKey: string; seq: number };
export const isOrdered = (m: OutboxMessage): m is OrderedMessage => m.orderingKey !== undefined && m.seq !== undefined;

/**
 * A fresh message is one the key has not seen yet: a first attempt off the outbox topic, not put
 * back by the releaser or by `advance`. Every other record of an ordered message (a retry, a
 * release) is its key's head by construction: it was made the head before it left the key.
 */
export const isFresh = (m: OutboxMessage) => m.attempt === 1 && !m.released;

type Ctx = Pick<AppContext, 'db' | 'log' | 'producer' | 'topics'>;

export class OrderingStore {
  constructor(private readonly ctx: Ctx) {}

  /**
   * The statements an attempt makes about its key are retried until they succeed (like the
   * recorder's), with a growing pause: a control database or broker that is away for a moment
   * must not leave a record unfinished, which only a restart would take up again (found by the
   * crash test: a head's block failed while PostgreSQL was down, and its message stalled).
   */
  async #persist<T>(what: string, fn: () => Promise<T>): Promise<T> {
    for (let i = 0; ; i++) {
      try {
        return await fn();
      } catch (err) {
        if (i === 0 || i % 20 === 0) this.ctx.log.warn({ err, what }, 'an ordering statement failed; retrying');
        await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** Math.min(i, 6))));
      }
    }
  }

  /**
   * The dispatcher's check of a fetch, in one statement: which of `msgs` have an outcome in the
   * ledger already (ledger.ts, alreadyRecorded), and the heads of the keys of `ordered`: one round
   * trip a fetch, which at moderate rates holds a record or two. Both answers are keyed by
   * project. A head is partly a hint: a key read as blocked by another message still goes through
   * `park`, which decides within the project; the ledger's answer is taken as it is.
   */
  async check(msgs: readonly OutboxMessage[], ordered: readonly OrderedMessage[]): Promise<FetchCheck> {
    if (ordered.length === 0) return { recorded: await alreadyRecorded(this.ctx.db, msgs), heads: new Map() };
    const r = await this.ctx.db.query<{ project: string; id: string; run: number; attempt: number; held: boolean; ordering_key: string | null }>({
      name: 'ledger-check-heads',
      // a row with an ordering key is a head (its id is the head's message), one without it a recorded attempt
      text: `${recordedSql(', null::text as ordering_key')}
             union all
             select h.project_ref, h.message_id, null, null, null, h.ordering_key
               from ordering_heads h
               join unnest($5::text[], $6::text[]) as k(project_ref, ordering_key) using (project_ref, ordering_key)`,
      values: [...recordedValues(msgs), ordered.map((m) => m.project), ordered.map((m) => m.orderingKey)],
    });
    const out: FetchCheck = { recorded: new Set(), heads: new Map() };
    for (const row of r.rows) {
      if (row.ordering_key === null) out.recorded.add(doneKey(row));
      else out.heads.set(laneOf({ project: row.project, orderingKey: row.ordering_key }), { messageId: row.id });
    }
    return out;
  }

  /**
   * Queues a fresh message behind its key's head, if the key has one that is not this message.
   * One statement: the head row is read FOR SHARE, so an `advance` running at the same moment
   * either sees this message queued or has already ended the block (then this one passes).
   */
  async park(msg: OrderedMessage): Promise<'parked' | 'pass' | 'head'> {
    const { headers } = encodeMessage(msg, { dueAt: 0 });
    const r = await this.#persist('park', () => this.ctx.db.query(
      `with h as (select message_id from ordering_heads where project_ref = $1 and ordering_key = $2 for share),
            ins as (insert into ordering_queue (project_ref, ordering_key, seq, message_id, run, attempt, headers, value)
                    select $1, $2, $3, $4, $5, $6, $7, $8 from h where h.message_id <> $4
                    on conflict do nothing returning 1)
       select (select message_id from h) as head, (select count(*) from ins)::int as queued`,
      [msg.project, msg.orderingKey, msg.seq, msg.id, msg.run, msg.attempt, headers, msg.rawValue],
    ));
    const head: string | null = r.rows[0].head;
    if (head === null) return 'pass';
    if (head === msg.id) return 'head';
    orderingParks.inc();
    this.ctx.log.debug({ message: msg.id, project: msg.project, key: msg.orderingKey, head }, 'queued behind the head of its ordering key');
    return 'parked';
  }

  /** Whether this run of the message has a final outcome in the ledger (a copy of it ended first). */
  async ended(msg: OrderedMessage): Promise<boolean> {
    const r = await this.#persist('ended', () => this.ctx.db.query({
      name: 'ordering-ended',
      text: `select 1 from delivery_ledger where project_ref = $1 and message_id = $2 and run = $3 and final limit 1`,
      values: [msg.project, msg.id, msg.run],
    }));
    return (r.rowCount ?? 0) > 0;
  }

  /**
   * Makes `msg` its key's head (it failed and goes up the retry ladder, or is held): written before
   * the retry record or the hold, so a crash in between leaves the key blocked, never open with a
   * message still on its way. A key already headed by this message keeps its `since`.
   */
  async block(msg: OrderedMessage, reason: HeadReason): Promise<void> {
    const r = await this.#persist('block', () => this.ctx.db.query(
      `insert into ordering_heads (project_ref, ordering_key, message_id, run, seq, reason)
       values ($1, $2, $3, $4, $5, $6)
       on conflict (project_ref, ordering_key) do update set run = excluded.run, reason = excluded.reason
        where ordering_heads.message_id = excluded.message_id
       returning 1`,
      [msg.project, msg.orderingKey, msg.id, msg.run, msg.seq, reason],
    ));
    if (r.rowCount === 0) {
      // another message heads the key: only a manual action races like this (a retry of an older run)
      this.ctx.log.warn({ message: msg.id, project: msg.project, key: msg.orderingKey }, 'ordering key already headed by another message; this one keeps its place on the retry ladder');
    }
  }

  /**
   * The head `messageId` of `key` has a final outcome: the next queued message (lowest seq) is
   * deleted from the queue, produced to the outbox topic as released 'next' and made the head, all
   * in one transaction; with none queued, the block ends. Not the head (any more): nothing to do.
   */
  async advance(project: string, key: string, messageId: string): Promise<'next' | 'drained' | 'not_head'> {
    const result = await this.#persist('advance', () => this.#advance(project, key, messageId));
    if (result !== 'not_head') {
      orderingAdvances.inc({ result });
      this.ctx.log.debug({ project, key, message: messageId, result }, 'ordering key advanced');
    }
    return result;
  }

  #advance(project: string, key: string, messageId: string): Promise<'next' | 'drained' | 'not_head'> {
    return withTransaction(this.ctx.db, async (c) => {
      const h = await c.query(`select 1 from ordering_heads where project_ref = $1 and ordering_key = $2 and message_id = $3 for update`, [project, key, messageId]);
      if (h.rowCount === 0) return 'not_head' as const;
      const next = await c.query<{ seq: string; message_id: string; run: number; headers: Record<string, string>; value: Buffer }>(
        `delete from ordering_queue q
          where (q.project_ref, q.ordering_key, q.seq, q.message_id, q.run) = (
            select project_ref, ordering_key, seq, message_id, run from ordering_queue
             where project_ref = $1 and ordering_key = $2 order by seq, run limit 1 for update)
         returning q.seq, q.message_id, q.run, q.headers, q.value`,
        [project, key],
      );
      const n = next.rows[0];
      if (!n) {
        await c.query(`delete from ordering_heads where project_ref = $1 and ordering_key = $2`, [project, key]);
        return 'drained' as const;
      }
      await c.query(
        `update ordering_heads set message_id = $3, run = $4, seq = $5, reason = 'next', head_since = now() where project_ref = $1 and ordering_key = $2`,
        [project, key, n.message_id, n.run, n.seq],
      );
      await this.ctx.producer.send({
        topic: this.ctx.topics.outbox,
        acks: -1,
        messages: [{ key, value: n.value, headers: { ...n.headers, 'due-at': '0', released: 'next' } }],
      });
      return 'next' as const;
    });
  }

  /**
   * Advances heads whose run has a final outcome in the ledger (an advance cut off by a crash, or a
   * head the owner skipped), and reads the gauges. Safe in every process at once (row locks).
   */
  async sweep(limit = 200): Promise<number> {
    const r = await this.ctx.db.query<{ project_ref: string; ordering_key: string; message_id: string }>(
      `select h.project_ref, h.ordering_key, h.message_id from ordering_heads h
        where exists (select 1 from delivery_ledger l
                       where l.project_ref = h.project_ref and l.message_id = h.message_id and l.run = h.run and l.final)
        limit $1`,
      [limit],
    );
    let n = 0;
    for (const row of r.rows) {
      try {
        if ((await this.advance(row.project_ref, row.ordering_key, row.message_id)) !== 'not_head') n++;
      } catch (err) {
        this.ctx.log.warn({ err, project: row.project_ref, key: row.ordering_key }, 'advancing an ordering key failed; the next sweep tries again');
      }
    }
    const g = await this.ctx.db.query<{ heads: number; queued: number }>(
      `select (select count(*) from ordering_heads)::int as heads,
              coalesce((select n_live_tup from pg_stat_user_tables where relname = 'ordering_queue' limit 1), 0)::int as queued`,
    );
    orderingBlockedKeys.set(g.rows[0].heads);
    orderingQueuedMessages.set(g.rows[0].queued);
    return n;
  }
}

/** Map key of an ordering key in a process (per project). */
export const laneOf = (m: { project: string; orderingKey: string }) => `${m.project}\u0000${m.orderingKey}`;

const SWEEP_MS = 5000;

/** The periodic sweep of a dispatcher process. */
export function startOrderingSweeper(store: OrderingStore, log: AppContext['log']): { stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const loop = async () => {
    if (stopped) return;
    await store.sweep().catch((err) => log.debug({ err }, 'ordering sweep failed; trying again'));
    if (!stopped) timer = setTimeout(loop, SWEEP_MS);
  };
  timer = setTimeout(loop, SWEEP_MS);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
