// Housekeeping of the dispatcher role: deletes what no longer serves a purpose, so the control
// database does not grow with every delivery ever made.
//
// - delivery_ledger rows exist to stop a record that is read again (after a crash or a rebalance)
//   from being sent again. A record can only be read again while its topic keeps it: the outbox and
//   retry topics keep 7 days (src/kafka/client.ts), so rows older than LEDGER_RETENTION (at least
//   8 days, config.ts) can no longer match anything.
// - held_releases rows (a hold put back by the releaser, migration 112) stop the held record, read
//   again after a crash, from being sent beside its released copy: the same reason, the same age.
// - delivery_callbacks rows that are finished (ok or failed) are kept as long, for the same replay
//   reason (a replayed final event must find its row and not call again), then deleted; the
//   callbacks consumer ignores final events older than LEDGER_RETENTION for the same reason.
// The outbox and retry topics roll a segment a day (src/kafka/client.ts), so 7-day retention means
// at most ~8 days readable.
//
// The deliveries listing is not touched: it is the owner's history (and is rebuilt from the events
// topic). Deletion runs in slices of SLICE rows so no statement holds locks for long, under an
// advisory lock so that of several dispatcher processes one does it at a time.
import type { AppContext } from '../context.js';
import type { Worker } from './worker.js';

const SLICE = 5000;
const LOCK_KEY = 0x6c656467; // "ledg"

export interface HousekeepingResult {
  ledger: number;
  /** held_releases rows */
  releases: number;
  callbacks: number;
  /** false when another process holds the lock (it is doing the work) */
  ran: boolean;
}

export async function housekeep(ctx: AppContext, retentionMs = ctx.cfg.LEDGER_RETENTION): Promise<HousekeepingResult> {
  const client = await ctx.db.connect();
  try {
    const lock = await client.query('select pg_try_advisory_lock($1) as ok', [LOCK_KEY]);
    if (!lock.rows[0].ok) return { ledger: 0, releases: 0, callbacks: 0, ran: false };
    try {
      const cutoff = new Date(Date.now() - retentionMs);
      const ledger = await sliced(
        () => client.query('delete from delivery_ledger where ctid = any(array(select ctid from delivery_ledger where recorded_at < $1 limit $2))', [cutoff, SLICE]),
      );
      const releases = await sliced(
        () => client.query('delete from held_releases where ctid = any(array(select ctid from held_releases where released_at < $1 limit $2))', [cutoff, SLICE]),
      );
      const callbacks = await sliced(() =>
        client.query(
          `delete from delivery_callbacks where ctid = any(array(
             select ctid from delivery_callbacks where updated_at < $1 and status in ('ok', 'failed') limit $2))`,
          [cutoff, SLICE],
        ),
      );
      return { ledger, releases, callbacks, ran: true };
    } finally {
      await client.query('select pg_advisory_unlock($1)', [LOCK_KEY]);
    }
  } finally {
    client.release();
  }
}

async function sliced(run: () => Promise<{ rowCount: number | null }>): Promise<number> {
  let total = 0;
  for (;;) {
    const n = (await run()).rowCount ?? 0;
    total += n;
    if (n < SLICE) return total;
  }
}

/** Runs housekeeping every HOUSEKEEPING_INTERVAL (first run one interval after start). */
export function startHousekeeping(ctx: AppContext): Worker {
  const log = ctx.log.child({ component: 'housekeeping' });
  let running: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    if (running) return;
    running = housekeep(ctx)
      .then((r) => {
        if (r.ledger > 0 || r.releases > 0 || r.callbacks > 0) log.info(r, 'deleted ledger, release and callback rows past LEDGER_RETENTION');
      })
      .catch((err) => log.warn({ err }, 'housekeeping failed; it runs again at the next interval'))
      .finally(() => {
        running = null;
      });
  }, ctx.cfg.HOUSEKEEPING_INTERVAL);
  timer.unref();
  return {
    name: 'housekeeping',
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
