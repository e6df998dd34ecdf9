// Step 7 of idle capture (idle-capture.ts): when a database cluster goes quiet, its idle slots are
// emptied, so that the next wake has almost nothing to decode.
//
// Why: a resumed task decodes all the WAL its slot holds before its first new message, twice when
// it has an offset stored (~1.8 ms per MB each on the development machine). Worse, when that takes
// longer than the ~10 ms Debezium waits before its first read of the stream, the read finds nothing
// and a slow connector sleeps CAPTURE_SLOW_POLL (500 ms) before the next: the wake is bimodal. Bench
// run Y: slots holding avg 4 MB, 71 of 100 wakes under 0.4 s; run E (avg 1 MB), 82; the others
// 0.5 s later. Step 6 advances a slot only at CAPTURE_IDLE_MAX_WAL (64 MB), which bounds what a
// write-heavy cluster costs: every idle slot decodes all the cluster's WAL, and each advance
// decodes again from the last running-transactions record (up to 15 s of WAL) before it.
//
// So the lower threshold, CAPTURE_IDLE_QUIET_WAL, applies only while the cluster is quiet: it wrote
// less than that over the last QUIET_WINDOW_MS (30 s). Then every idle slot holding more than that
// is advanced, by the same background advancer as step 6 (one at a time, at most once per
// ADVANCE_SPACING_MS each). What it costs is bounded by the quiet itself: on a quiet cluster two
// passes empty the slot (below), and it comes due again only once the cluster has written
// CAPTURE_IDLE_QUIET_WAL more; the WAL it decodes is WAL the next wake, refresh or step 6 would
// have decoded anyway. A busy cluster is left to step 6, as before.
//
// A slot whose database the write counters prove unwritten since the stop (the usual case) is not
// advanced but replaced by a new slot (slot-swap.ts), which holds next to nothing at once. The
// rest of this paragraph is about slots that must be advanced (peeked first, or a transaction
// open in the cluster keeps a new slot from being created). One advance does not empty a slot; two do. PostgreSQL moves restart_lsn only to a snapshot it
// took at a running-transactions record (logged every 15 s while WAL is written, up to ~25 s apart
// when the background writer hibernates), and while decoding past the slot's confirmed position it
// takes only the first such record as its candidate, applied when the advance confirms its end
// (logical.c, LogicalIncreaseRestartDecodingForSlot: "only increase if the previous values have
// been applied"; and the candidate a stopped connector left behind is applied first). So the first
// advance moves confirmed_flush to the WAL's end and restart_lsn one step; the second decodes the
// same WAL again, now below confirmed_flush, where each record's candidate applies at once, and
// empties the slot up to the last record before the first's end (seen in the test: 22.9 MB held
// after the first advance, 0.03 MB after the second, every time). The 30 s window makes sure that
// record is after the last burst. Step 6 pays the same two passes per CAPTURE_IDLE_MAX_WAL; step 7
// pays them per quiet spell instead, on WAL that step 6, the refresh or the wake would otherwise
// decode later, twice as well.
//
// A transaction left open anywhere in the cluster (any database: the slot tracks every transaction
// id) holds restart_lsn where it began, however often the slot is advanced. SlotFloors tells that
// apart: an advance that leaves more than CAPTURE_IDLE_QUIET_WAL is followed by a second (after
// ADVANCE_SPACING_MS); if that one leaves more too, what it left is the slot's floor, and the next
// pair of passes comes only at CAPTURE_IDLE_QUIET_WAL over that. Without the floor, a hundred idle
// slots held by one open transaction would each be decoded every 15 s.

/**
 * The window a cluster's quiet is judged on. PostgreSQL logs the running transactions (which is as
 * far as an advance can move a slot's restart_lsn) every 15 s while WAL is written
 * (LOG_SNAPSHOT_INTERVAL_MS), up to ~25 s apart when the background writer hibernates (10 s):
 * after 30 s of quiet one has been logged after the last burst's commits, and the WAL an emptied
 * slot keeps (since that record) is less than CAPTURE_IDLE_QUIET_WAL.
 */
export const QUIET_WINDOW_MS = 30_000;

/** How often the wake check reads a cluster's idle slots (ClusterPace.due). */
export const SLOT_READ_MS = 1_000;

/** How much WAL each cluster wrote over the last QUIET_WINDOW_MS, from the wake check's readings. */
export class ClusterPace {
  /** per cluster: readings in order, the oldest the newest one at least a window old */
  readonly #readings = new Map<string, { at: number; lsn: number }[]>();

  /**
   * Records the cluster's WAL position (bytes) read now and returns the WAL it wrote over the last
   * QUIET_WINDOW_MS, or null until it has been read for that long.
   */
  record(cluster: string, lsn: number, now = Date.now()): number | null {
    const r = this.#readings.get(cluster) ?? [];
    // a reading older than the last one (a failover to a server behind it): start again
    if (r.length > 0 && lsn < r[r.length - 1].lsn) r.length = 0;
    r.push({ at: now, lsn });
    while (r.length > 1 && now - r[1].at >= QUIET_WINDOW_MS) r.shift();
    this.#readings.set(cluster, r);
    return now - r[0].at >= QUIET_WINDOW_MS ? lsn - r[0].lsn : null;
  }

  /**
   * Whether the cluster's slots are due to be read: at most once per SLOT_READ_MS. Steps 6 and 7
   * need no more, and the wake check, which carries the read, runs every CAPTURE_WAKE_INTERVAL.
   */
  due(cluster: string, now = Date.now()): boolean {
    const r = this.#readings.get(cluster);
    return !r || r.length === 0 || now - r[r.length - 1].at >= SLOT_READ_MS;
  }

  clear(): void {
    this.#readings.clear();
  }
}

/** Idle slots an advance did not empty, and what each may hold before step 7 tries again (see above). */
export class SlotFloors {
  readonly #slots = new Map<string, { misses: number; floor: number }>();

  /** An advance of the project's slot left `held` bytes of WAL in it. */
  advanced(ref: string, held: number, quietWal: number): void {
    if (held <= quietWal) {
      this.#slots.delete(ref);
      return;
    }
    // the first of a pair: the second pass empties it (above); the second too: something holds it,
    // and the next pair comes once the cluster has written CAPTURE_IDLE_QUIET_WAL more
    const misses = (this.#slots.get(ref)?.misses ?? 0) + 1;
    this.#slots.set(ref, { misses, floor: misses % 2 === 1 ? 0 : held });
  }

  /** What the slot may hold over CAPTURE_IDLE_QUIET_WAL before step 7 advances it. */
  floor(ref: string): number {
    return this.#slots.get(ref)?.floor ?? 0;
  }

  forget(ref: string): void {
    this.#slots.delete(ref);
  }

  clear(): void {
    this.#slots.clear();
  }
}

/**
 * The WAL an idle slot may hold before it is advanced: CAPTURE_IDLE_MAX_WAL, or on a quiet cluster
 * CAPTURE_IDLE_QUIET_WAL more than its floor (SlotFloors; 0 turns the quiet rule off).
 */
export function advanceThreshold(o: { maxWal: number; quietWal: number; written: number | null; floor: number }): { bytes: number; quiet: boolean } {
  const quiet = o.quietWal > 0 && o.written !== null && o.written < o.quietWal;
  return quiet ? { bytes: Math.min(o.maxWal, o.floor + o.quietWal), quiet } : { bytes: o.maxWal, quiet };
}

/** Why step 7 advanced a slot, for the log line. */
export function quietReason(q: { held: number; written: number }): string {
  const mb = (bytes: number) => (bytes / 1048576).toFixed(1);
  return `the cluster is quiet (${mb(q.written)} MB of WAL in 30 s) and the slot held ${mb(q.held)} MB, more than CAPTURE_IDLE_QUIET_WAL over its floor`;
}
