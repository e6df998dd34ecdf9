import pg from 'pg';

// bigint (int8) as JS number would silently lose precision; counts we return are small, so parse
// them explicitly where needed and keep the driver default (string) elsewhere.
export function createPool(connectionString: string, max = 20, applicationName = 'integrations', options?: string): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, application_name: applicationName, idleTimeoutMillis: 30_000, ...(options && { options }) });
  // A client losing its connection (database restart, failover) must not crash the process. An
  // idle one is the pool's ('error' on the pool); one checked out between two queries (inside a
  // transaction, or held as a lock) emits 'error' on itself, which without a listener is an
  // uncaught exception: its next query fails instead, and the caller's error handling takes over.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

export async function withTransaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  let broken: Error | undefined;
  try {
    await c.query('begin');
    const out = await fn(c);
    await c.query('commit');
    return out;
  } catch (e) {
    await c.query('rollback').catch((err: Error) => (broken = err));
    throw e;
  } finally {
    // a connection whose rollback failed may still be inside the transaction: closed, not pooled
    c.release(broken);
  }
}
