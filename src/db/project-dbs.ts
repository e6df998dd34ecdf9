// Connection pools to project databases, opened lazily and kept per project. The connection string
// is stored encrypted in the control database and decrypted only here, in memory.
import type { Pool } from './pool.js';
import { createPool } from './pool.js';
import { aad, type SecretBox } from '../lib/secret-box.js';

export class ProjectDatabases {
  readonly #pools = new Map<string, Pool>();
  constructor(
    private readonly control: Pool,
    private readonly box: SecretBox,
    private readonly maxPerProject = 5,
  ) {}

  async url(ref: string): Promise<string> {
    const r = await this.control.query('select database_url_enc from projects where ref = $1', [ref]);
    if (r.rowCount === 0) throw new Error(`unknown project ${ref}`);
    return this.box.open(r.rows[0].database_url_enc, aad.databaseUrl(ref));
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
    const p = this.#pools.get(ref);
    this.#pools.delete(ref);
    await p?.end().catch(() => {});
  }

  async closeAll(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((p) => p.end().catch(() => {})));
  }
}
