// Step 6 and 7 of idle capture (idle-capture.ts) at a constant cost: an idle slot is replaced by a
// new one at the WAL's end instead of being advanced there.
//
// Why: pg_replication_slot_advance decodes every byte of the cluster's WAL the slot holds (in
// fast-forward, ~8 ms of PostgreSQL per MB on the development machine), so each idle slot costs in
// proportion to what the whole cluster writes: with a hundred idle projects beside a busy one,
// about 2 ms of PostgreSQL a message, more than the whole delivery path, and one advancer (one
// slot at a time) keeps up with only ~1.5 MB/s of cluster WAL before slots drift towards
// max_slot_wal_keep_size (docs/benchmark.md, twenty-fourth round). A new slot decodes only from
// where it starts to its consistent point: milliseconds, whatever the slot held.
//
// A slot cannot be moved or renamed, and the connector is configured with its name, so:
//
//  1. Skip (the caller advances as before) when a transaction holding an xid anywhere in the
//     cluster has been open for over a second, or a prepared transaction exists: creating a slot
//     waits for every such transaction to end (snapbuild.c, SnapBuildWaitSnapshot).
//  2. Create a TEMPORARY slot under a second name (swapSlotName), with a statement timeout (a
//     creation that fails, for any reason, leaves nothing behind: advance instead). It
//     belongs to this session: any failure, cancel or crash from here drops it with the session,
//     and nothing is left pinning WAL.
//  3. Prove with the write counters (whyNotQuiet, the same proof step 6 uses to skip its peek) that
//     nothing was written to the database since W0, read now, after the new slot reached its
//     consistent point: every transaction that commits after that point is decoded by the new slot
//     in full, and nothing before it is a message not yet captured (what committed before L0 was
//     peeked at the stop, what after W0 would have moved the counters). No proof: drop it, advance.
//  4. In one statement, drop the connector's slot and copy the new one under its name
//     (pg_copy_logical_replication_slot, persistent: same restart_lsn and confirmed_flush, no
//     decoding). A wake waits for this statement instead of cancelling it (IdleSlotAdvancer.cancel),
//     so the connector never starts between the two and creates a slot of its own.
//  5. Drop the temporary one.
//
// Debezium, resumed, asks the slot to stream from its stored offset, older than the slot's
// confirmed position; PostgreSQL starts from the confirmed position (logical.c: "has been already
// streamed, forwarding to"), exactly as it does after an advance. Debezium 3.1 warns that the
// offset is behind the slot; 3.2 and later refuse it, as they refuse an advanced slot
// (docs/operations.md, external stack).
//
// What is left: if the server itself dies between the drop and the copy of step 4 (one statement),
// the slot is gone with the temporary one, and the connector, resumed, creates a new slot where the
// WAL then ends; a message committed to that project's database in those few milliseconds would
// not be captured. /health reports the slot missing (slot-figures.ts).
import type pg from 'pg';
import { whyNotQuiet, type OwnBackend } from './quiet-database.js';
import { createLogicalSlot } from './slot-create.js';

/** How long creating the replacement may wait for running transactions before the caller advances instead. */
export const SWAP_WAIT_MS = 2_000;

/** The temporary slot's name: slotName always starts with outbox_, so no project's slot is called this. */
export const swapSlotName = (slot: string) => `swap_${slot.replace(/^outbox_/, '')}`.slice(0, 63);

export type SwapResult = { swapped: true } | { swapped: false; why: string };

export interface SwapProof {
  /** the database's write counters when the connector stopped (connector_supervision.wake_writes) */
  w0: number;
  /** the service's statistics readers (quiet-database.ts) */
  own: readonly OwnBackend[];
  /**
   * Called just before step 4: false when a wake asked the advance to stop (then nothing is
   * changed); true marks the swap as no longer to be cancelled (IdleSlotAdvancer sets that in the
   * same tick as it answers, so no cancel falls between).
   */
  enter(): boolean | Promise<boolean>;
}

/**
 * Replaces the stopped connector's `slot` by a new one at the WAL's end, once the counters prove
 * nothing uncaptured lies before it. `c` is connected to the project's database, used for nothing
 * else meanwhile, and closed by the caller soon after (the temporary slot goes with it).
 * `swapped: false` changes nothing: the caller advances the slot instead.
 */
export async function swapIdleSlot(c: pg.Client, slot: string, proof: SwapProof): Promise<SwapResult> {
  const swap = swapSlotName(slot);
  const blocked = (
    await c.query(
      `select exists (select 1 from pg_stat_activity where backend_xid is not null and pid <> pg_backend_pid()
                        and xact_start < clock_timestamp() - interval '1 second')
              or exists (select 1 from pg_prepared_xacts) as blocked`,
    )
  ).rows[0].blocked as boolean;
  if (blocked) return { swapped: false, why: 'a transaction holding an xid has been open over a second (a new slot would wait for it)' };
  const made = await createLogicalSlot(c, swap, { waitMs: SWAP_WAIT_MS, temporary: true });
  // a failed creation leaves nothing behind: advance instead (all slots in use, 53400, must not
  // resume every idle project whose slot comes due)
  if (!made.created) {
    if (made.waited) return { swapped: false, why: `creating the replacement slot waited over ${SWAP_WAIT_MS} ms for running transactions` };
    return { swapped: false, why: `creating the replacement slot failed: ${made.error.message}` };
  }
  const because = await whyNotQuiet(c, proof.w0, proof.own);
  if (because !== null) {
    await c.query('select pg_drop_replication_slot($1)', [swap]);
    return { swapped: false, why: because };
  }
  if (!(await proof.enter())) throw new Error('stopped before the slot was replaced: a wake wants it');
  try {
    // the drop first (a materialized CTE the copy depends on): it fails, changing nothing, if the
    // slot has a reader
    await c.query(`with d as materialized (select pg_drop_replication_slot($1)) select (pg_copy_logical_replication_slot($2, $1, false)).lsn from d`, [slot, swap]);
  } catch (e) {
    // dropped but not copied: copy again while the temporary slot is still here
    const gone = (await c.query('select 1 from pg_replication_slots where slot_name = $1', [slot])).rowCount === 0;
    if (gone) {
      await c.query('select pg_copy_logical_replication_slot($2, $1, false)', [slot, swap]).catch((again: Error) => {
        throw new Error(`the idle slot ${slot} was dropped and could not be put back (${again.message}); its connector will create a new one when resumed`);
      });
    }
    throw e;
  }
  await c.query('select pg_drop_replication_slot($1)', [swap]);
  return { swapped: true };
}
