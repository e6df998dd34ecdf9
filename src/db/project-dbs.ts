// Connection pools to project databases, opened lazily and kept per project. The connection string
// is stored encrypted in the control database and decrypted only here, in memory.
//
// The service's own statements there (webhook triggers, backfills, previews, test events, the
// capture flag) run with search_path pinned to pg_catalog then pg_temp, set at connection start:
// the project's users may create functions and operators in public (or any schema of the default
// path), and one that matches a call better than the built-in (a public.nextval(text) beside
// pg_catalog.nextval(regclass), found by review 2026-11-29) would otherwise run as the service's
// role, a superuser on managed projects. pg_temp last keeps a session's temporary tables and types
// from standing in for the built-ins. Callbacks are the projects' own code, called as
// base_callback, and keep the database's default path (callbackPool).
import type { Pool } from './pool.js';
import { createPool } from './pool.js';
import { aad, type SecretBox } from '../lib/secret-box.js';

/** The search_path of the service's own sessions in project databases (see above). */
export const OWN_SEARCH_PATH = 'pg_catalog,pg_temp';

export class ProjectDatabases {
  readonly #pools = new Map<string, Pool>();
  readonly #callbackPools = new Map<string, Pool>();
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

  /** The service's own statements (search_path pinned, see above). */
  async pool(ref: string): Promise<Pool> {
    let p = this.#pools.get(ref);
    if (!p) {
      p = createPool(await this.url(ref), this.maxPerProject, `integrations:${ref}`, `-c search_path=${OWN_SEARCH_PATH}`);
      this.#pools.set(ref, p);
    }
    return p;
  }

  /** Callbacks: the project's own functions, with the database's default search_path. */
  async callbackPool(ref: string): Promise<Pool> {
    let p = this.#callbackPools.get(ref);
    if (!p) {
      p = createPool(await this.url(ref), this.maxPerProject, `integrations:${ref}:callbacks`);
      this.#callbackPools.set(ref, p);
    }
    return p;
  }

  async forget(ref: string): Promise<void> {
    this.#opened.delete(ref);
    const ps = [this.#pools.get(ref), this.#callbackPools.get(ref)];
    this.#pools.delete(ref);
    this.#callbackPools.delete(ref);
    await Promise.all(ps.map((p) => p?.end().catch(() => {})));
  }

  async closeAll(): Promise<void> {
    const pools = [...this.#pools.values(), ...this.#callbackPools.values()];
    this.#pools.clear();
    this.#callbackPools.clear();
    this.#opened.clear();
    await Promise.all(pools.map((p) => p.end().catch(() => {})));
  }
}
