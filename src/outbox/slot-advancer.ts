// Step 6 and 7 of idle capture (idle-capture.ts), off the wake path: the background queue that
// moves idle projects' slots, one at a time.
import type { AppContext } from '../context.js';
import { idleSlotAdvances } from '../lib/metrics.js';
import { advanceIdleSlot, type AdvanceHooks, type AdvanceHow, type Wake } from './idle-capture.js';
import { ClusterPace, quietReason, SlotFloors } from './quiet-cluster.js';
import { StatsReaders } from './quiet-database.js';

type Ctx = Pick<AppContext, 'db' | 'connect' | 'cfg' | 'projectDbs' | 'log'>;

/**
 * How long a slot just advanced is left alone. PostgreSQL moves a slot's restart_lsn (what the
 * retained WAL is measured from) only up to a point where it logged the running transactions,
 * which the background writer does every 15 s while WAL is written (LOG_SNAPSHOT_INTERVAL_MS): an
 * advance sooner than that decodes the same WAL again and frees nothing more (the test saw 29
 * advances of one slot in 15 s, one per wake check, before this).
 */
export const ADVANCE_SPACING_MS = 15_000;

/** The advance in progress: its backend, whether a wake asked it to stop, and whether it may no longer be cancelled. */
interface Current {
  ref: string;
  pid?: number;
  cancelled?: boolean;
  critical?: boolean;
  /** resolves when the advance has ended, whichever way */
  done: Promise<void>;
}

/**
 * Step 6, off the wake path. Advancing a slot peeks, then decodes, all of the cluster's WAL it
 * holds (seconds per gigabyte on the development machine), and after a bulk load every idle slot
 * needs it: done inside the wake loop, a hundred advances one after another held every wake behind
 * them (bench run O: the first message of a hundred idle projects waited 37 s at the median, 78 s
 * at worst). So advances run here, one at a time, in the background: the wake loop offers the
 * slots that need one and goes on resuming projects that were written to. A slot found holding a
 * message not yet captured (or that could not be advanced) is handed back to the wake loop, which
 * resumes its connector; one woken by a write meanwhile is found with a reader ('busy') and left.
 */
export class IdleSlotAdvancer {
  readonly #queue = new Map<string, Wake>();
  readonly #resume = new Map<string, Wake>();
  #running: Promise<void> | null = null;
  /** when each slot was last advanced */
  readonly #advancedAt = new Map<string, number>();
  /** the wake check's connections (projectsToWake), which step 6 knows never enqueue */
  readonly readers = new StatsReaders();
  /** how much WAL each cluster wrote lately (step 7) */
  readonly pace = new ClusterPace();
  /** step 7's record of slots an advance did not empty (SlotFloors) */
  readonly #floors = new SlotFloors();
  /** the slot being advanced now, the backend doing it, and whether a wake asked it to stop */
  #current: Current | null = null;

  constructor(
    private readonly ctx: Ctx,
    private readonly log: Pick<Ctx['log'], 'info' | 'warn'>,
  ) {}

  /**
   * Queues these slots for an advance (a slot already queued or being advanced is not queued twice,
   * nor one advanced less than ADVANCE_SPACING_MS ago unless it is close to being invalidated).
   */
  offer(wakes: readonly Wake[]): void {
    const now = Date.now();
    for (const [ref, at] of this.#advancedAt) if (now - at >= ADVANCE_SPACING_MS) this.#advancedAt.delete(ref);
    // a slot close to being invalidated is not held back: a cluster writing fast could pass
    // max_slot_wal_keep_size within the spacing
    for (const w of wakes) if (!this.#queue.has(w.ref) && (w.nearLoss || !this.#advancedAt.has(w.ref))) this.#queue.set(w.ref, w);
    if (this.#queue.size > 0) this.#running ??= this.#drain().finally(() => (this.#running = null));
  }

  /** What the project's slot may hold on a quiet cluster over CAPTURE_IDLE_QUIET_WAL (SlotFloors). */
  floor(ref: string): number {
    return this.#floors.floor(ref);
  }

  /** The project's connector runs again: what its slot held is no longer the supervisor's to judge. */
  resumed(ref: string): void {
    this.#floors.forget(ref);
  }

  /** The projects whose connector must be resumed instead (an uncaptured message in the slot). */
  takeResumes(): Wake[] {
    const out = [...this.#resume.values()];
    this.#resume.clear();
    return out;
  }

  /**
   * A write woke this project: its advance, if queued, is dropped, and if in progress, cancelled,
   * so its connector finds the slot free (a peek holds it; Debezium would wait 10 s and retry).
   */
  async cancel(ref: string): Promise<void> {
    this.#queue.delete(ref);
    const cur = this.#current;
    if (cur?.ref !== ref) return;
    // it stops before its peek (advanceIdleSlot); a statement already running is cancelled
    cur.cancelled = true;
    // a replacement's drop and copy are waited for, never cut between them (slot-swap.ts)
    if (cur.critical) return void (await cur.done);
    if (cur.pid === undefined) return;
    const pool = await this.ctx.projectDbs.pool(ref);
    await pool.query('select pg_cancel_backend($1)', [cur.pid]).catch((err) => this.log.warn({ err, project: ref }, 'could not cancel the advance of a slot being woken'));
  }

  /**
   * Forgets what is queued and closes the statistics readers (the supervision lock was lost, or
   * the process stops); an advance in progress finishes.
   */
  async clear(): Promise<void> {
    this.#queue.clear();
    this.#resume.clear();
    this.#advancedAt.clear();
    this.#floors.clear();
    this.pace.clear();
    await this.readers.close();
  }

  async #drain(): Promise<void> {
    for (let next = this.#queue.values().next(); !next.done; next = this.#queue.values().next()) {
      const w = next.value;
      let finished!: () => void;
      const cur: Current = { ref: w.ref, done: new Promise<void>((r) => (finished = r)) };
      this.#current = cur;
      let how: { how: AdvanceHow; because?: string } = { how: 'peek' };
      let held: number | undefined;
      const hooks: AdvanceHooks = {
        backend: (pid) => (cur.pid = pid),
        stopped: () => cur.cancelled === true,
        enter: () => !cur.cancelled && (cur.critical = true),
        own: () => this.readers.own(),
        decided: (h) => (how = h),
        // what the slot still holds after the advance: only step 7 judges a floor on it
        ...(w.quiet && { held: (bytes: number) => (held = bytes) }),
      };
      const r = await advanceIdleSlot(this.ctx, w.ref, w.connector, hooks).catch((err) => {
        this.log.warn({ err, project: w.ref }, 'advancing an idle slot failed or was cancelled; resuming its connector instead');
        return 'pending' as const;
      });
      this.#current = null;
      finished();
      this.#queue.delete(w.ref);
      if (r === 'advanced') {
        this.#advancedAt.set(w.ref, Date.now());
        // only step 7's passes judge a floor: what a busy cluster's advance leaves is its pace
        if (w.quiet && held !== undefined) this.#floors.advanced(w.ref, held, this.ctx.cfg.CAPTURE_IDLE_QUIET_WAL);
        else this.#floors.forget(w.ref);
        idleSlotAdvances.inc({ how: how.how });
        const shown = { peek: 'a peek showed it', counters: 'its write counters showed it; no peek', replaced: 'its write counters showed it; replaced by a new slot' }[how.how];
        const why = w.quiet ? quietReason(w.quiet) : "it held more than CAPTURE_IDLE_MAX_WAL of the cluster's WAL";
        this.log.info(
          { project: w.ref, connector: w.connector, how: how.how, ...(how.how === 'peek' ? { peek_because: how.because } : { not_replaced_because: how.because }), quiet: w.quiet !== undefined, held_after: held },
          `idle slot advanced: ${why}, none of it a message (${shown})`,
        );
      }
      else if (r === 'pending') this.#resume.set(w.ref, w);
    }
  }
}
