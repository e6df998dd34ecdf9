// The delivery ledger (control database, delivery_ledger): one row per attempt made, its outcome,
// and whether it ended its run. It is what makes at-least-once cheap to keep: a record read again
// (after a crash, a rebalance or a replayed offset) whose attempt, or whose run's final outcome, is
// already here is not attempted again. Every key starts with the project (migration 103): another
// project's record with the same message id is another message. Written by the recorder
// (attempt/recorder.ts), read by the consumers before attempting (consume/), closed by retry and
// replay (recovery/), pruned by housekeeping.ts after LEDGER_RETENTION.
import type { AppContext } from '../context.js';
import { attemptKey, type OutboxMessage } from './message.js';

export interface LedgerRow {
  /** the message's project (the Kafka header Connect adds): part of every ledger key */
  project: string;
  messageId: string;
  run: number;
  attempt: number;
  outcome: string;
  final: boolean;
}

/** Records these attempts (a batch of the recorder), one row per attempt key, a final outcome preferred. */
export async function recordLedger(db: AppContext['db'], entries: readonly (LedgerRow | undefined | null)[]): Promise<void> {
  const byKey = new Map<string, LedgerRow>();
  for (const r of entries) {
    if (!r) continue;
    const k = `${r.project}:${r.messageId}:${r.run}:${r.attempt}`;
    if (!byKey.get(k)?.final) byKey.set(k, r);
  }
  const rows = [...byKey.values()];
  if (rows.length > 0) {
    await db.query({
      // named: prepared once per connection, as it runs a few hundred times a second
      name: 'ledger-insert',
      // The same attempt made twice (two processes across a rebalance) may record a failed copy
      // and a final one, in either order: the final one wins, so the run is known to have ended
      // and the failed copy's retries are skipped, as the projection already shows it ended.
      // The key starts with the project (migration 103): another project's record with the same
      // message id is another message, recorded beside this one.
      text: `insert into delivery_ledger as l (project_ref, message_id, run, attempt, outcome, final)
       select * from unnest($1::text[], $2::uuid[], $3::int[], $4::int[], $5::text[], $6::bool[])
       on conflict (project_ref, message_id, run, attempt) do update set outcome = excluded.outcome, final = true
        where excluded.final and not l.final`,
      values: [
        rows.map((r) => r.project),
        rows.map((r) => r.messageId),
        rows.map((r) => r.run),
        rows.map((r) => r.attempt),
        rows.map((r) => r.outcome),
        rows.map((r) => r.final),
      ],
    });
  }
}

/**
 * Which of these attempts are already done with here: recorded (the attempt itself, or a final
 * outcome of its run), or held for their endpoint (endpoints/gate.ts), within the message's own
 * project (a row of another project with the same message id is another message's). One query per
 * fetched batch. Returns doneKeys: ask it with isDone, which tells a held record from the releaser's
 * copy of it (both have the same attempt key).
 */
export async function alreadyRecorded(
  db: AppContext['db'],
  msgs: readonly Pick<OutboxMessage, 'project' | 'id' | 'run' | 'attempt'>[],
): Promise<Set<string>> {
  if (msgs.length === 0) return new Set();
  const r = await db.query({ name: 'ledger-check', text: recordedSql(), values: recordedValues(msgs) });
  return new Set(r.rows.map(doneKey));
}

/**
 * The key a row of recordedSql stands for: the attempt's (recorded: every copy of it is done with),
 * or, for a hold, the attempt's for records the releaser did not put back (isDone).
 */
export function doneKey(row: { project: string; id: string; run: number; attempt: number; held: boolean }): string {
  return row.held ? `${attemptKey(row)}|fresh` : attemptKey(row);
}

/** Whether `m` is done with, by a set of doneKey (alreadyRecorded, ordering/keys.ts's check). */
export function isDone(done: ReadonlySet<string>, m: Pick<OutboxMessage, 'project' | 'id' | 'run' | 'attempt' | 'released'>): boolean {
  const key = attemptKey(m);
  return done.has(key) || (m.released === undefined && done.has(`${key}|fresh`));
}

/**
 * The ledger check's statement: the rows (project, id, run, attempt, held) of the attempts
 * given as $1–$4 that are already done with (doneKey), each followed by `extra` columns (for a
 * statement that adds rows of another kind with `union all`: ordering/keys.ts reads the heads of a
 * fetch's keys with it).
 *
 * Done with: recorded in the ledger, or, for a record the releaser did not put back, held (isDone
 * tells the two: the releaser's copy has the held record's attempt key). A held
 * record's offset is committed as finished, but a dispatcher killed before that commit leaves it to
 * the partition's next owner, which would send it while the releaser also puts it back: two
 * requests, two final outcomes for one run (the crash test: 8 of 10,240 after a kill of a
 * dispatcher whose endpoint window had overflowed into holds). The hold is the message's live copy,
 * and after the releaser has put it back, its mark in held_releases (migration 112) is: without it,
 * a record read again between the release and the released copy's outcome was sent beside it.
 */
export function recordedSql(extra = ''): string {
  // Branches, not one OR: with an OR, PostgreSQL runs the subqueries as per-row subplans, which
  // doubled the statement's time (200 records: 0.50 → 1.06 ms); as a union each is a semi-join
  // (0.49 ms, the same as the ledger alone). A record both recorded and held comes back twice.
  return `with m as materialized (
         select * from unnest($1::text[], $2::uuid[], $3::int[], $4::int[]) as m(project, id, run, attempt))
       select m.project, m.id, m.run, m.attempt, false as held${extra} from m
        where exists (select 1 from delivery_ledger l
                       where l.project_ref = m.project and l.message_id = m.id and l.run = m.run and (l.attempt = m.attempt or l.final))
       union all
       select m.project, m.id, m.run, m.attempt, true${extra} from m
        where exists (select 1 from held_messages h
                       where h.project_ref = m.project and h.message_id = m.id and h.run = m.run and h.attempt = m.attempt)
       union all
       select m.project, m.id, m.run, m.attempt, true${extra} from m
        where exists (select 1 from held_releases r
                       where r.project_ref = m.project and r.message_id = m.id and r.run = m.run and r.attempt = m.attempt)`;
}

/** $1–$4 of recordedSql. */
export function recordedValues(msgs: readonly Pick<OutboxMessage, 'project' | 'id' | 'run' | 'attempt'>[]): unknown[] {
  return [msgs.map((m) => m.project), msgs.map((m) => m.id), msgs.map((m) => m.run), msgs.map((m) => m.attempt)];
}

/**
 * Ends these runs in the ledger before they are enqueued again as new runs (manual retry, bulk
 * replay): a record of an old run still on a topic is then skipped, never sent after the new one.
 * Returns the runs this call ended: the others were ended already, by a retry or replay that took
 * them first (the same run retried twice at once, a double click), and must not be enqueued again.
 * Run inside the transaction that enqueues them (recovery/replay.ts): a second caller waits on the
 * first's row until it commits, and a first that fails rolls back and leaves the run retryable.
 */
export async function supersedeRuns(db: Pick<AppContext['db'], 'query'>, ref: string, runs: readonly { id: string; run: number }[]): Promise<Set<string>> {
  const r = await db.query(
    `insert into delivery_ledger (project_ref, message_id, run, attempt, outcome, final)
     select $1, id, run, 0, 'superseded', true from unnest($2::uuid[], $3::int[]) as x(id, run)
     on conflict (project_ref, message_id, run, attempt) do nothing
     returning message_id::text as id, run`,
    // in one order, so two replays of overlapping sets wait on each other rather than deadlock
    [ref, ...unzip([...runs].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.run - b.run)))],
  );
  return new Set(r.rows.map((x: { id: string; run: number }) => `${x.id}:${x.run}`));
}

const unzip = (runs: readonly { id: string; run: number }[]) => [runs.map((r) => r.id), runs.map((r) => r.run)];
