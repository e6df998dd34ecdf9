// Partition leases for ordered messages (docs/delivery.md, "Ordered delivery"). Kafka's group
// assignment says who should consume a partition, but not who still has attempts in flight on it:
// a process that lost a partition (a rebalance, or a session timeout it has not noticed yet) may
// still be sending, and the new owner must not send the next message of a key before that one has
// ended. So an ordered message is attempted only by the holder of its partition's lease in
// dispatch_leases (per consumer group):
//
//   - a process acquires the lease of each partition it is assigned, once the row is free (absent,
//     released, or past `until`); until then its ordered messages of that partition wait;
//   - it renews the leases it holds every RENEW_MS (one statement), for the partitions it is
//     assigned and for those it lost while ordered attempts are still in flight on them; a lost
//     partition's lease is released (deleted) when the last of them ends;
//   - before an ordered attempt starts, the lease must be known held for at least SAFE_MS more (the
//     time of the renewal's request plus TTL_MS); if not, it is renewed first, and a lease another
//     process took means the partition is lost here: the record is left to its new owner.
//
// A process stalled longer than TTL_MS (a long GC pause, a starved machine) loses its leases; it
// starts nothing more on waking, but an attempt it had already sent before stalling may still end
// after the new owner's next attempt of the same key. Unordered messages never wait for a lease.
import { randomUUID } from 'node:crypto';
import type { IMemberAssignment } from 'kafkajs';
import type { AppContext } from '../../context.js';

const TTL_MS = 10_000;
const RENEW_MS = 2_000;
const SAFE_MS = 5_000;
const RETRY_MS = 250;

const pk = (topic: string, partition: number) => `${topic}:${partition}`;
function split(k: string): [string, number] {
  const i = k.lastIndexOf(':');
  return [k.slice(0, i), Number(k.slice(i + 1))];
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref?.());

export class PartitionLeases {
  readonly #owner = randomUUID();
  #assigned = new Set<string>();
  /** leases held: local epoch ms until which they are surely ours */
  #held = new Map<string, number>();
  /** leases held: local epoch ms at which this hold began (another process may have held it before) */
  #since = new Map<string, number>();
  /** ordered attempts in flight here, per partition */
  #flying = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    private readonly ctx: Pick<AppContext, 'db' | 'log'>,
    private readonly groupId: string,
  ) {
    const loop = async () => {
      if (this.#stopped) return;
      await this.#renew().catch((err) => this.ctx.log.debug({ err }, 'renewing partition leases failed; trying again'));
      if (!this.#stopped) this.#timer = setTimeout(loop, RENEW_MS).unref();
    };
    this.#timer = setTimeout(loop, RENEW_MS).unref();
  }

  /** A (re)join with this assignment: partitions lost without ordered attempts in flight are released. */
  onJoin(assignment: IMemberAssignment): void {
    const next = new Set<string>();
    for (const [topic, partitions] of Object.entries(assignment)) for (const p of partitions) next.add(pk(topic, p));
    this.#assigned = next;
    const idle = [...this.#held.keys()].filter((k) => !next.has(k) && !this.#flying.get(k));
    if (idle.length) void this.#release(idle);
  }

  /**
   * When this process's current hold of the lease began (0: not held). What was read of the
   * partition's messages before then (the ledger, the heads of keys) may predate what the previous
   * holder recorded, and must be read again.
   */
  heldSince(topic: string, partition: number): number {
    return this.#since.get(pk(topic, partition)) ?? 0;
  }

  /**
   * Whether the lease is surely this process's now (renewed every RENEW_MS while it is assigned, or
   * while ordered attempts are in flight on it): an ordered attempt already under way may go on.
   */
  holds(topic: string, partition: number): boolean {
    return !this.#stopped && (this.#held.get(pk(topic, partition)) ?? 0) > Date.now();
  }

  owns(topic: string, partition: number): boolean {
    return this.#assigned.has(pk(topic, partition));
  }

  /**
   * Whether an ordered attempt of this partition may start here: 'held' (the lease is held for at
   * least SAFE_MS), 'acquired' (it had to be taken or renewed first: what was read before may be
   * stale), or 'lost' (the partition is no longer this process's: leave the record to its owner).
   */
  async ensure(topic: string, partition: number): Promise<'held' | 'acquired' | 'lost'> {
    const k = pk(topic, partition);
    for (;;) {
      if (this.#stopped || !this.#assigned.has(k)) return 'lost';
      if ((this.#held.get(k) ?? 0) - Date.now() >= SAFE_MS) return 'held';
      const ok = await this.#acquire(k).catch((err) => {
        this.ctx.log.debug({ err, topic, partition }, 'acquiring a partition lease failed; trying again');
        return false;
      });
      if (ok) return 'acquired';
      await sleep(RETRY_MS);
    }
  }

  begin(topic: string, partition: number): void {
    const k = pk(topic, partition);
    this.#flying.set(k, (this.#flying.get(k) ?? 0) + 1);
  }

  end(topic: string, partition: number): void {
    const k = pk(topic, partition);
    const n = (this.#flying.get(k) ?? 1) - 1;
    if (n > 0) return void this.#flying.set(k, n);
    this.#flying.delete(k);
    if (!this.#assigned.has(k) && this.#held.has(k)) void this.#release([k]);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#release([...this.#held.keys()]);
  }

  /** Takes the lease if it is free or ours; records until when it is surely held. */
  async #acquire(k: string): Promise<boolean> {
    const [topic, partition] = split(k);
    const sent = Date.now();
    const r = await this.ctx.db.query(
      `insert into dispatch_leases as l (group_id, topic, partition, owner, until)
       values ($1, $2, $3, $4, now() + $5 * interval '1 millisecond')
       on conflict (group_id, topic, partition) do update set owner = excluded.owner, until = excluded.until
        where l.owner = excluded.owner or l.until < now()
       returning 1`,
      [this.groupId, topic, partition, this.#owner, TTL_MS],
    );
    if (r.rowCount === 0) return false;
    // not surely ours until now: another process may have held it meanwhile
    if ((this.#held.get(k) ?? 0) < sent) this.#since.set(k, Date.now());
    this.#held.set(k, sent + TTL_MS);
    return true;
  }

  /** One statement for every lease held: kept ones get a new `until`, the others are lost. */
  async #renew(): Promise<void> {
    const keys = [...this.#held.keys()];
    if (keys.length === 0) return;
    const sent = Date.now();
    const r = await this.ctx.db.query<{ topic: string; partition: number }>(
      `update dispatch_leases l set until = now() + $3 * interval '1 millisecond'
         from unnest($4::text[], $5::int[]) as x(topic, partition)
        where l.group_id = $1 and l.owner = $2 and l.topic = x.topic and l.partition = x.partition
        returning l.topic, l.partition`,
      [this.groupId, this.#owner, TTL_MS, keys.map((k) => split(k)[0]), keys.map((k) => split(k)[1])],
    );
    const kept = new Set(r.rows.map((x) => pk(x.topic, x.partition)));
    for (const k of keys) {
      if (kept.has(k)) this.#held.set(k, sent + TTL_MS);
      else {
        this.#held.delete(k);
        this.#since.delete(k);
        this.ctx.log.warn({ topic: split(k)[0], partition: split(k)[1] }, 'partition lease lost to another process; its ordered messages are left to it');
      }
    }
  }

  async #release(keys: string[]): Promise<void> {
    for (const k of keys) {
      this.#held.delete(k);
      this.#since.delete(k);
    }
    if (keys.length === 0) return;
    await this.ctx.db
      .query(
        `delete from dispatch_leases l using unnest($3::text[], $4::int[]) as x(topic, partition)
          where l.group_id = $1 and l.owner = $2 and l.topic = x.topic and l.partition = x.partition`,
        [this.groupId, this.#owner, keys.map((k) => split(k)[0]), keys.map((k) => split(k)[1])],
      )
      .catch((err) => this.ctx.log.debug({ err }, 'releasing partition leases failed; they expire'));
  }
}
