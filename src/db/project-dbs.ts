// Connection pools to project databases, opened lazily and kept per project. The connection string
// is stored encrypted in the control database and decrypted only here, in memory.
import type { Pool } from './pool.js';
import { createPool } from './pool.js';
import { aad, type SecretBox } from '../lib/secret-box.js';

export class ProjectDatabases {
  readonly #pools = new Map<string, Pool>();
  /** the last connection string opened per project, with what it was opened from */
  readonly #opened = new Map<string, { sealed: Buffer; url: string }>();
  constructor(
    private readonly control: Pool,
    private readonly box: SecretBox,
    private readonly maxPerProject = 5,
  ) {}

  async url(ref: string): Promise<string> {
    const r = await this.control.query('select database_url_enc from projects where ref = $1', [ref]);
    if (r.rowCount === 0) throw new Error(`unknown project ${ref}`);
    return this.open(ref, r.rows[0].database_url_enc);
  }

  /**
   * The connection string sealed in a projects row read by the caller. Opening it is kept per
   * project until the sealed value changes (a new URL, a re-seal under another master key): the
   * idle projects' wake check reads every idle project's URL every CAPTURE_WAKE_INTERVAL (100 ms).
   */
  open(ref: string, sealed: Buffer): string {
    const last = this.#opened.get(ref);
    if (last && last.sealed.equals(sealed)) return last.url;
    const url = this.box.open(sealed, aad.databaseUrl(ref));
    this.#opened.set(ref, { sealed, url });
    return url;
  }

  async pool(ref: string): Promise<Pool> {
    let p = this.#pools.get(ref);
    if (!p) {
      p = createPool(await this.url(ref), this.maxPerProject, `integrations:${ref}`);
      this.#pools.set(ref, p);
    }
    return p;
  }

  async forget(ref: string): Promise<void> {
    this.#opened.delete(ref);
    const p = this.#pools.get(ref);
    this.#pools.delete(ref);
    await p?.end().catch(() => {});
  }

  async closeAll(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    this.#opened.clear();
    await Promise.all(pools.map((p) => p.end().catch(() => {})));
  }
}
