import pg from 'pg';

// bigint (int8) as JS number would silently lose precision; counts we return are small, so parse
// them explicitly where needed and keep the driver default (string) elsewhere.
export function createPool(connectionString: string, max = 20, applicationName = 'integrations'): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, application_name: applicationName, idleTimeoutMillis: 30_000 });
  // An idle client losing its connection (database restart) must not crash the process.
  pool.on('error', () => {});
  return pool;
}

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

export async function withTransaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query('begin');
    const out = await fn(c);
    await c.query('commit');
    return out;
  } catch (e) {
    await c.query('rollback').catch(() => {});
    throw e;
  } finally {
    c.release();
  }
}
