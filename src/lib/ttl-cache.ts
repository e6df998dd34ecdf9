// A small read-through cache with a time-to-live, used for what the dispatcher reads from the
// control database per message (webhook configuration, signing secrets, project secrets). Keys
// missing from the cache are loaded in one call; concurrent readers of a key share one load.
// `null` (not found) is cached too, for the same TTL, so a deleted webhook or secret is noticed
// within one TTL and an unknown one does not cost a query per message.
export class TtlCache<V> {
  readonly #entries = new Map<string, { value: V | null; expires: number }>();
  readonly #loading = new Map<string, Promise<V | null>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 50_000,
  ) {}

  async getMany(keys: string[], load: (missing: string[]) => Promise<Map<string, V>>): Promise<Map<string, V | null>> {
    const now = Date.now();
    const out = new Map<string, V | null>();
    const waits: Promise<void>[] = [];
    const missing: string[] = [];
    for (const key of new Set(keys)) {
      const hit = this.#entries.get(key);
      if (hit && hit.expires > now) out.set(key, hit.value);
      else if (this.#loading.has(key)) waits.push(this.#loading.get(key)!.then((v) => void out.set(key, v)));
      else missing.push(key);
    }
    if (missing.length > 0) {
      const batch = load(missing);
      for (const key of missing) {
        const p = batch.then(
          (found) => {
            const value = found.get(key) ?? null;
            this.#set(key, value);
            return value;
          },
        );
        this.#loading.set(key, p);
        // a failed load is not cached: the next reader tries again
        const done = () => void this.#loading.delete(key);
        p.then(done, done);
        waits.push(p.then((v) => void out.set(key, v)));
      }
    }
    await Promise.all(waits);
    return out;
  }

  /** One key; a fresh hit answers without getMany's set, map and promises (a dispatcher asks several times a message). */
  async get(key: string, load: (missing: string[]) => Promise<Map<string, V>>): Promise<V | null> {
    const hit = this.#entries.get(key);
    if (hit && hit.expires > Date.now()) return hit.value;
    return (await this.getMany([key], load)).get(key) ?? null;
  }

  /** Forgets a key loaded more than `maxAgeMs` ago (any age: 0), so its next reader loads it afresh. */
  delete(key: string, maxAgeMs = 0): void {
    const e = this.#entries.get(key);
    if (e && Date.now() - (e.expires - this.ttlMs) >= maxAgeMs) this.#entries.delete(key);
  }

  #set(key: string, value: V | null) {
    if (this.#entries.size >= this.maxEntries) this.#entries.clear();
    this.#entries.set(key, { value, expires: Date.now() + this.ttlMs });
  }
}
