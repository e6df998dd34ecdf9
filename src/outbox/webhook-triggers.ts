// One trigger per webhook on its table, calling base.webhook_trigger(<webhook id>). Creating,
// updating or deleting a webhook re-creates or drops its trigger in the project database.
//
// Column filters (`updateColumns`): an UPDATE then fires only when one of those columns changed
// value. That is decided by a WHEN clause on a second trigger, `webhook_<id>_update`, which fires
// for UPDATE alone (a WHEN clause that reads OLD cannot sit on an INSERT trigger, nor one reading
// NEW on a DELETE trigger). WHEN is the cheapest correct place: Postgres evaluates it in the
// executor right after the row is written, and when it is false no after-trigger event is queued
// and the plpgsql function is never called. `UPDATE OF cols` is not used: it fires whenever a
// column is in the SET list, even with its value unchanged, and misses a change made to it by a
// BEFORE trigger; comparing the values is what "changed" means.
import pg from 'pg';
import { ApiError } from '../errors.js';
import { compileFilter, filterColumnNames, type RowFilter } from './row-filter.js';

export interface WebhookTriggerSpec {
  id: string;
  schema: string;
  table: string;
  events: ('INSERT' | 'UPDATE' | 'DELETE')[];
  /** null or absent: every UPDATE fires; else only an UPDATE that changes one of these columns */
  updateColumns?: string[] | null;
  /** 'row': messages keyed by the row's primary key, delivered in commit order per row (docs/delivery.md) */
  ordering?: WebhookOrdering;
  /** a row filter (row-filter.ts): only matching changes fire; null or absent: every change */
  filter?: RowFilter | null;
  /** payload shaping: the columns a message carries (null or absent: all of them) */
  columns?: string[] | null;
}

export type WebhookOrdering = 'none' | 'row';

export const triggerName = (webhookId: string) => `webhook_${webhookId.replace(/-/g, '')}`;
/** The UPDATE trigger of a webhook with a column filter (or a row filter). */
export const updateTriggerName = (webhookId: string) => `${triggerName(webhookId)}_update`;
/** The INSERT and DELETE triggers of a webhook with a row filter (a WHEN clause may read only NEW, or only OLD). */
const eventTriggerName = (webhookId: string, event: 'insert' | 'delete') => `${triggerName(webhookId)}_${event}`;
const allTriggerNames = (id: string) => [triggerName(id), updateTriggerName(id), eventTriggerName(id, 'insert'), eventTriggerName(id, 'delete')];

/** "field: "a", "b" are not columns of schema.table": the one wording of an unknown column, whichever field named it. */
export function notColumns(field: string, missing: string[], schema: string, table: string, code: 'column_not_found' | 'invalid_sample' = 'column_not_found'): ApiError {
  return new ApiError(code, `${field}: ${missing.map((m) => JSON.stringify(m)).join(', ')} ${missing.length === 1 ? 'is not a column' : 'are not columns'} of ${schema}.${table} (names are case-sensitive).`);
}

/**
 * Checks a row filter against the table: its columns exist (400 column_not_found naming them) and
 * every comparison is one PostgreSQL can make with the column's type (400 invalid_filter with its
 * reason), by planning the condition on the table. Reads only; runs before any trigger changes.
 */
export async function checkRowFilter(c: pg.ClientBase, schema: string, table: string, filter: RowFilter): Promise<void> {
  const compiled = compileFilter(filter, { row: 'new', old: 'old' });
  const names = filterColumnNames(compiled.columns);
  const r = await c.query<{ attname: string }>(
    `select a.attname from pg_attribute a join pg_class t on t.oid = a.attrelid join pg_namespace n on n.oid = t.relnamespace
      where n.nspname = $1 and t.relname = $2 and a.attname = any($3) and a.attnum > 0 and not a.attisdropped`,
    [schema, table, names],
  );
  const found = new Set(r.rows.map((x) => x.attname));
  const missing = names.filter((n) => !found.has(n));
  if (missing.length) throw notColumns('filter', missing, schema, table);
  const rel = `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)}`;
  try {
    // planned, never run (limit 0 under EXPLAIN): types and operators are resolved as in the trigger
    await c.query(`explain select 1 from ${rel} as new cross join ${rel} as old where ${compiled.sql} limit 0`);
  } catch (err) {
    const e = err as { code?: string; message?: string };
    if (e.code && /^(22|42)/.test(e.code)) throw new ApiError('invalid_filter', `filter: ${e.message} (${schema}.${table})`);
    throw err;
  }
}

/**
 * Refuses a table whose rows cannot be serialised (or, `coerced`, typed from JSON) without running
 * code of the database's users: base._user_code_in (base-schema.sql) says why. The trigger checks
 * again on every row while such a cast exists; this answers the API with a 400 before that.
 */
export async function refuseUserCode(c: pg.ClientBase, schema: string, table: string, coerced = false): Promise<void> {
  const rel = `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)}`;
  const why = (await c.query('select base._user_code_in($1::regclass, $2) as why', [rel, coerced])).rows[0]?.why as string | null;
  if (why) {
    throw new ApiError(
      'unsafe_column_type',
      `${schema}.${table} has a column of type ${why}: serialising it would run that code with the rights of the service's database user. Drop the cast (or the domain's check), or leave the table without a webhook.`,
    );
  }
}

export async function installWebhookTrigger(c: pg.ClientBase, w: WebhookTriggerSpec): Promise<void> {
  const table = `${pg.escapeIdentifier(w.schema)}.${pg.escapeIdentifier(w.table)}`;
  await refuseUserCode(c, w.schema, w.table);
  // per-row ordering: the primary key's columns as they are now go to the trigger as arguments
  // (a later change of the primary key needs a re-install: any PATCH of the webhook's ordering or table)
  const keyColumns = w.ordering === 'row' ? await primaryKeyColumns(c, w.schema, w.table) : [];
  if (w.ordering === 'row' && keyColumns.length === 0) {
    throw new ApiError('ordering_needs_primary_key', `ordering "row" needs a primary key, and ${w.schema}.${w.table} has none: add one, or use ordering "none".`);
  }
  if (w.filter) await checkRowFilter(c, w.schema, w.table, w.filter);
  if (w.columns?.length) {
    const have = new Set(await tableColumns(c, w.schema, w.table));
    const missing = w.columns.filter((col) => !have.has(col));
    if (missing.length) throw notColumns('columns', missing, w.schema, w.table);
  }
  // base.webhook_trigger's arguments (base-schema.sql): the id, then 'v2', the number of key columns, the key columns and the payload's columns
  const more = keyColumns.length || w.columns?.length ? ['v2', String(keyColumns.length), ...keyColumns, ...(w.columns ?? [])] : [];
  const args = [w.id, ...more].map((a) => pg.escapeLiteral(a)).join(', ');
  const call = `for each row execute function base.webhook_trigger(${args})`;
  const events = [...new Set(w.events)];
  const changed = events.includes('UPDATE') && w.updateColumns?.length ? await changedCondition(c, w.schema, w.table, w.updateColumns) : null;
  // drop + create rather than "create or replace" so a change of events is applied on any version
  for (const name of allTriggerNames(w.id)) await c.query(`drop trigger if exists ${pg.escapeIdentifier(name)} on ${table}`);
  if (w.filter) {
    // one trigger per event: a WHEN clause may read NEW only on INSERT, OLD only on DELETE
    const when = {
      INSERT: compileFilter(w.filter, { row: 'new', old: null }).sql,
      UPDATE: compileFilter(w.filter, { row: 'new', old: 'old' }).sql,
      DELETE: compileFilter(w.filter, { row: 'old', old: 'old' }).sql,
    };
    for (const e of events.sort()) {
      const name = e === 'UPDATE' ? updateTriggerName(w.id) : eventTriggerName(w.id, e === 'INSERT' ? 'insert' : 'delete');
      const cond = e === 'UPDATE' && changed ? `(${changed}) and ${when.UPDATE}` : when[e];
      await c.query(`create trigger ${pg.escapeIdentifier(name)} after ${e.toLowerCase()} on ${table} for each row when (${cond}) ${call.replace('for each row ', '')}`);
    }
    return;
  }
  const plain = events.filter((e) => !(changed && e === 'UPDATE')).sort();
  if (plain.length) await c.query(`create trigger ${pg.escapeIdentifier(triggerName(w.id))} after ${plain.join(' or ')} on ${table} ${call}`);
  if (changed) {
    await c.query(`create trigger ${pg.escapeIdentifier(updateTriggerName(w.id))} after update on ${table} for each row when (${changed}) execute function base.webhook_trigger(${args})`);
  }
}

/** The table's columns in order (empty: no such table). */
export async function tableColumns(c: pg.ClientBase, schema: string, table: string): Promise<string[]> {
  const r = await c.query<{ attname: string }>(
    `select a.attname from pg_attribute a join pg_class t on t.oid = a.attrelid join pg_namespace n on n.oid = t.relnamespace
      where n.nspname = $1 and t.relname = $2 and a.attnum > 0 and not a.attisdropped order by a.attnum`,
    [schema, table],
  );
  return r.rows.map((x) => x.attname);
}

/** The table's primary-key columns in key order (empty: no primary key). */
export async function primaryKeyColumns(c: pg.ClientBase, schema: string, table: string): Promise<string[]> {
  const r = await c.query<{ attname: string }>(
    `select a.attname
       from pg_index i
       join pg_class t on t.oid = i.indrelid
       join pg_namespace n on n.oid = t.relnamespace
       cross join lateral unnest(i.indkey) with ordinality as k(attnum, pos)
       join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum
      where n.nspname = $1 and t.relname = $2 and i.indisprimary
      order by k.pos`,
    [schema, table],
  );
  return r.rows.map((x) => x.attname);
}

/**
 * `old.a is distinct from new.a or ...` for the given columns. A column whose type has no equality
 * operator (json, xml, point), and arrays and composites (whose equality is only resolved per element
 * at run time), are compared as jsonb, which every type converts to; the others directly, the
 * cheapest comparison.
 */
async function changedCondition(c: pg.ClientBase, schema: string, table: string, columns: string[]): Promise<string> {
  const r = await c.query<{ attname: string; direct: boolean }>(
    `select a.attname,
            b.typtype = 'b' and b.typcategory <> 'A' and exists (
              select 1 from pg_operator o
               where o.oprname = '=' and o.oprleft = o.oprright
                 and (o.oprleft = b.oid or o.oprleft in (select casttarget from pg_cast where castsource = b.oid and castmethod = 'b'))
            ) as direct
       from pg_attribute a
       join pg_class r on r.oid = a.attrelid
       join pg_namespace n on n.oid = r.relnamespace
       join pg_type t on t.oid = a.atttypid
       join pg_type b on b.oid = case when t.typtype = 'd' then t.typbasetype else t.oid end
      where n.nspname = $1 and r.relname = $2 and a.attname = any($3) and a.attnum > 0 and not a.attisdropped`,
    [schema, table, columns],
  );
  const direct = new Map(r.rows.map((row) => [row.attname, row.direct]));
  const missing = columns.filter((col) => !direct.has(col));
  // checked by the API before; a column dropped or renamed since makes a re-install fail here
  if (missing.length) throw new ApiError('column_not_found', `update_columns: ${missing.map((m) => JSON.stringify(m)).join(', ')} no longer in ${schema}.${table}; change update_columns.`);
  return columns
    .map((col) => {
      const id = pg.escapeIdentifier(col);
      return direct.get(col) ? `old.${id} is distinct from new.${id}` : `to_jsonb(old.${id}) is distinct from to_jsonb(new.${id})`;
    })
    .join(' or ');
}

export async function dropWebhookTrigger(c: pg.ClientBase, w: Pick<WebhookTriggerSpec, 'id' | 'schema' | 'table'>): Promise<void> {
  const exists = await c.query('select 1 from pg_class t join pg_namespace n on n.oid = t.relnamespace where n.nspname = $1 and t.relname = $2', [w.schema, w.table]);
  if (exists.rowCount === 0) return;
  const table = `${pg.escapeIdentifier(w.schema)}.${pg.escapeIdentifier(w.table)}`;
  for (const name of allTriggerNames(w.id)) await c.query(`drop trigger if exists ${pg.escapeIdentifier(name)} on ${table}`);
}
