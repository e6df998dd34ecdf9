// Creating a logical replication slot, for the two places that make one: enabling a project's
// outbox (enable.ts: the connector's persistent slot) and replacing an idle one (slot-swap.ts: a
// temporary slot, copied under the connector's name). PostgreSQL's creation waits for every
// transaction holding an xid in the cluster to end (snapbuild.c, SnapBuildWaitSnapshot), so it runs
// under a statement timeout, and its failure is returned, not thrown: each caller decides what a
// refusal means (the enable reports the blockers; the replacement advances the slot instead).
import type pg from 'pg';

export type SlotCreation =
  | { created: true }
  /**
   * `code`: the server's SQLSTATE (42710: the slot exists; 53400: every slot in use). `waited`: it
   * was the statement timeout, not an operator's pg_cancel_backend (both are 57014; told apart by
   * time, since the message is translated under lc_messages: the server's timer starts after ours,
   * so a real timeout always measures at least waitMs here).
   */
  | { created: false; code: string | undefined; waited: boolean; error: Error };

/**
 * Creates the pgoutput slot `name` on `c`'s database, waiting at most `waitMs` (0: without limit)
 * for running transactions. A temporary slot belongs to `c`'s session and goes with it. Leaves the
 * session's statement_timeout at 0. Throws only when `c` itself fails (the connection is gone).
 */
export async function createLogicalSlot(c: pg.ClientBase, name: string, opts: { waitMs: number; temporary?: boolean }): Promise<SlotCreation> {
  await c.query(`select set_config('statement_timeout', $1, false)`, [String(opts.waitMs)]);
  const started = performance.now();
  try {
    await c.query(`select pg_create_logical_replication_slot($1, 'pgoutput', $2)`, [name, opts.temporary ?? false]);
    return { created: true };
  } catch (e) {
    const code = (e as { code?: string }).code;
    const waited = code === '57014' && opts.waitMs > 0 && performance.now() - started >= opts.waitMs - 50;
    return { created: false, code, waited, error: e as Error };
  } finally {
    await c.query(`select set_config('statement_timeout', '0', false)`);
  }
}
