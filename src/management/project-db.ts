// Management operations that touch a project's own database (table checks, webhook triggers).
// That database may be an external one the owner gave us; when it cannot be reached the client
// gets 503 service_unavailable, not a 500 carrying driver text.
import type pg from 'pg';
import type { AppContext } from '../context.js';
import { ApiError, isApiError } from '../errors.js';
import { tableColumns } from '../outbox/index.js';

type Ctx = Pick<AppContext, 'projectDbs' | 'log'>;

export async function withProjectDb<T>(ctx: Ctx, ref: string, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await (await ctx.projectDbs.pool(ref)).connect();
  } catch (err) {
    ctx.log.warn({ err, project: ref }, 'project database unreachable');
    throw new ApiError('service_unavailable', 'The project database cannot be reached; try again.');
  }
  try {
    return await fn(client);
  } catch (err) {
    throw translate(err, ctx, ref);
  } finally {
    client.release();
  }
}

function translate(err: unknown, ctx: Ctx, ref: string): unknown {
  if (isApiError(err)) return err;
  const code = (err as { code?: string }).code ?? '';
  if (code === '42P01') return new ApiError('table_not_found', 'The table no longer exists in the project database.');
  if (code === '42501') return new ApiError('trigger_not_allowed');
  // a column the webhook names (filter, columns, template) dropped or renamed since it was saved
  if (code === '42703') return new ApiError('column_not_found', `A column the webhook names is no longer in its table (${(err as Error).message}): update the webhook's filter, columns or template.`);
  // connection exceptions, admin shutdown, too many connections, database gone
  if (/^(08|57P|53300|3D000)/.test(code) || /^E(CONN|PIPE|TIMEDOUT)/.test(code)) {
    ctx.log.warn({ err, project: ref }, 'project database unavailable');
    return new ApiError('service_unavailable', 'The project database cannot be reached; try again.');
  }
  return err;
}

/** True when schema.table is a table (plain or partitioned) that a row trigger can sit on. */
export async function tableExists(c: pg.ClientBase, schema: string, table: string): Promise<boolean> {
  const r = await c.query(
    `select 1 from pg_class t join pg_namespace n on n.oid = t.relnamespace
      where n.nspname = $1 and t.relname = $2 and t.relkind in ('r', 'p')`,
    [schema, table],
  );
  return (r.rowCount ?? 0) > 0;
}

/** The names among `columns` that are not columns of schema.table (case-sensitive, as in the catalog). */
export async function missingColumns(c: pg.ClientBase, schema: string, table: string, columns: string[]): Promise<string[]> {
  const found = new Set(await tableColumns(c, schema, table));
  return columns.filter((col) => !found.has(col));
}
