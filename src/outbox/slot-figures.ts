// The supervisor's read of each project's replication slot (supervisor.ts): WAL retained and not
// yet confirmed, wal_status, and the write lag of its reader, one query per database cluster
// (pg_replication_slots is cluster-wide), on the wake check's reading connection.
import type { AppContext } from '../context.js';
import { slotName } from './connector.js';
import { byCluster, type StatsReaders } from './quiet-database.js';
import { swapSlotName } from './slot-swap.js';

export interface SlotInfo {
  retained: number | null;
  pending: number | null;
  walStatus: string | null;
  safeWal: number | null;
  active: boolean;
  writeLagSeconds: number | null;
}

/**
 * Slot figures per project: null where the project has no slot, an Error where its URL could not
 * be opened or its cluster read. `database_url_enc` is opened through ProjectDatabases' cache.
 *
 * A project left out of the map was caught mid-swap (slot-swap.ts, step 4): its slot is dropped and
 * copied back in one statement, and another session can read pg_replication_slots between the two.
 * The swap's temporary slot exists from before the drop until after the copy, so a slot that is
 * absent while its swap slot is present is being replaced, not missing: the caller keeps what it
 * knew (until 2026-11-29 such a read recorded the slot missing and /health failed that connector
 * until the next check).
 */
export async function readSlotFigures(
  ctx: Pick<AppContext, 'projectDbs' | 'cfg'>,
  readers: StatsReaders,
  rows: { ref: string; database_url_enc: Buffer }[],
): Promise<Map<string, SlotInfo | Error | null>> {
  const out = new Map<string, SlotInfo | Error | null>();
  const opened: { item: string; url: string }[] = [];
  for (const { ref, database_url_enc } of rows) {
    try {
      opened.push({ item: ref, url: ctx.projectDbs.open(ref, database_url_enc) });
    } catch (err) {
      out.set(ref, err as Error);
    }
  }
  const prefix = ctx.cfg.TOPIC_PREFIX;
  await Promise.all(
    [...byCluster(opened)].map(async ([key, { url, members: inCluster }]) => {
      const members = inCluster.map((m) => m.item);
      try {
        // the wake check's reading connection: it only reads, so an idle slot's database it sits
        // in can still be shown quiet (quiet-database.ts)
        const names = members.map((ref) => slotName(ref, prefix));
        const swaps = names.map(swapSlotName);
        const r = await readers.query(
          key,
          url,
          `select s.slot_name, s.active, s.wal_status, s.safe_wal_size::float8 as safe,
                  pg_wal_lsn_diff(pg_current_wal_lsn(), s.restart_lsn)::float8 as retained,
                  pg_wal_lsn_diff(pg_current_wal_lsn(), s.confirmed_flush_lsn)::float8 as pending,
                  extract(epoch from r.write_lag)::float8 as write_lag
             from pg_replication_slots s left join pg_stat_replication r on r.pid = s.active_pid
            where s.slot_name = any($1)`,
          [[...names, ...swaps]],
        );
        const byName = new Map(r.rows.map((x) => [x.slot_name as string, x]));
        members.forEach((ref, i) => {
          const x = byName.get(names[i]);
          if (!x && byName.has(swaps[i])) return; // mid-swap: not read at this check
          out.set(ref, x ? { retained: x.retained, pending: x.pending, walStatus: x.wal_status, safeWal: x.safe, active: x.active, writeLagSeconds: x.write_lag } : null);
        });
      } catch (err) {
        for (const ref of members) out.set(ref, err as Error);
      }
    }),
  );
  return out;
}
