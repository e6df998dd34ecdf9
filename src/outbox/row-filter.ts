// Row filters of database webhooks (docs/delivery.md, "Row filters"): a declarative condition on
// the row, compiled to the WHEN clause of the webhook's triggers, so a row that does not match
// enqueues nothing (no outbox row, no Kafka record, no delivery). The owner's filter is JSON; no
// text of it reaches the database except as a quoted identifier (pg.escapeIdentifier) or a quoted
// literal (pg.escapeLiteral) that PostgreSQL casts to the column's type.
//
//   {"status": "paid"}                                  equality (shorthand for {"eq": …})
//   {"amount": {"gt": 100}}                              eq, ne, gt, gte, lt, lte
//   {"status": {"in": ["paid", "shipped"]}}              in, not_in (1 to 100 scalars)
//   {"deleted_at": {"null": true}}                       null checks (true: is null, false: is not null)
//   {"old.status": {"ne": "paid"}}                       the row before an UPDATE (or the deleted row)
//   {"and": [ … ]}, {"or": [ … ]}, {"not": { … }}       combinations; several keys in one object: and
//
// `col` is the row as it is after the change (the deleted row for a DELETE); `old.col` the row
// before it (UPDATE and DELETE; an INSERT has none, so a condition on it is false, except
// {"null": true}). `ne` is `IS DISTINCT FROM`: a null column is "not equal" to a value; the other
// comparisons are false on null.
import pg from 'pg';
import { ApiError } from '../errors.js';

export type RowFilter = Record<string, unknown>;

const COMPARE: Record<string, string> = { eq: '=', ne: 'is distinct from', gt: '>', gte: '>=', lt: '<', lte: '<=' };
const OPERATORS = [...Object.keys(COMPARE), 'in', 'not_in', 'null'];
const MAX_DEPTH = 8;
const MAX_NODES = 100;
const MAX_IN = 100;
const MAX_TEXT = 1000;

/** A column the filter reads: `old` for old.<column>. */
export interface FilterColumn {
  column: string;
  old: boolean;
}

const bad = (message: string) => new ApiError('invalid_filter', message);
// Postgres text holds neither a NUL nor an unpaired surrogate, and a NUL would end the trigger's SQL where it stands
const storable = (s: string) => !s.includes('\u0000') && !/[\ud800-\udfff]/u.test(s);

function scalar(v: unknown, where: string): string {
  if (typeof v === 'string') {
    if (v.length > MAX_TEXT) throw bad(`${where}: a text value is at most ${MAX_TEXT} characters`);
    if (!storable(v)) throw bad(`${where}: a text value may not hold a NUL character or an unpaired surrogate`);
    return pg.escapeLiteral(v);
  }
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw bad(`${where}: a number must be finite`);
    return pg.escapeLiteral(String(v));
  }
  if (typeof v === 'boolean') return pg.escapeLiteral(String(v));
  throw bad(`${where}: compare with a string, a number or a boolean (null: use {"null": true})`);
}

/**
 * Checks the filter's shape and compiles it for the row aliases given: `row` for `col` and `old`
 * for `old.col` (NEW and OLD in a trigger). Returns the SQL and the columns it reads.
 */
export function compileFilter(filter: unknown, alias: { row: string; old: string | null }): { sql: string; columns: FilterColumn[] } {
  const columns: FilterColumn[] = [];
  let nodes = 0;

  function column(key: string): { sql: string | null; col: FilterColumn } {
    const old = key.startsWith('old.');
    const name = old ? key.slice(4) : key;
    if (name === '' || name.length > 63) throw bad(`"${key}": a column name is 1 to 63 characters`);
    if (!storable(name)) throw bad(`a column name may not hold a NUL character or an unpaired surrogate`);
    const col = { column: name, old };
    columns.push(col);
    const a = old ? alias.old : alias.row;
    return { sql: a === null ? null : `${a}.${pg.escapeIdentifier(name)}`, col };
  }

  function condition(key: string, spec: unknown): string {
    const { sql: ref } = column(key);
    // a comparison on a row that does not exist (old of an INSERT) is false; is null is true
    const ops = spec !== null && typeof spec === 'object' && !Array.isArray(spec) ? Object.entries(spec as Record<string, unknown>) : [['eq', spec] as [string, unknown]];
    if (ops.length === 0) throw bad(`"${key}": give an operator (${OPERATORS.join(', ')})`);
    return ops
      .map(([op, v]) => {
        const where = `"${key}".${op}`;
        if (!OPERATORS.includes(op)) throw bad(`"${key}": unknown operator "${op}" (use ${OPERATORS.join(', ')})`);
        if (op === 'null') {
          if (typeof v !== 'boolean') throw bad(`${where}: true (is null) or false (is not null)`);
          if (ref === null) return v ? 'true' : 'false';
          return `${ref} is ${v ? '' : 'not '}null`;
        }
        if (op === 'in' || op === 'not_in') {
          if (!Array.isArray(v) || v.length === 0 || v.length > MAX_IN) throw bad(`${where}: a list of 1 to ${MAX_IN} values`);
          const list = v.map((x, i) => scalar(x, `${where}[${i}]`)).join(', ');
          if (ref === null) return 'false';
          return op === 'in' ? `${ref} in (${list})` : `(${ref} is not null and ${ref} not in (${list}))`;
        }
        const lit = scalar(v, where);
        if (ref === null) return 'false';
        return `${ref} ${COMPARE[op]} ${lit}`;
      })
      .join(' and ');
  }

  function node(f: unknown, depth: number, where: string): string {
    if (++nodes > MAX_NODES) throw bad(`the filter has more than ${MAX_NODES} conditions`);
    if (depth > MAX_DEPTH) throw bad(`the filter nests deeper than ${MAX_DEPTH} levels`);
    if (f === null || typeof f !== 'object' || Array.isArray(f)) throw bad(`${where}: a filter is a JSON object`);
    const entries = Object.entries(f as Record<string, unknown>);
    if (entries.length === 0) throw bad(`${where}: an empty filter; use null for no filter`);
    const parts = entries.map(([k, v]) => {
      if (k === 'and' || k === 'or') {
        if (!Array.isArray(v) || v.length === 0) throw bad(`${where}.${k}: a list of 1 or more filters`);
        return `(${v.map((x, i) => node(x, depth + 1, `${where}.${k}[${i}]`)).join(` ${k} `)})`;
      }
      if (k === 'not') return `not coalesce(${node(v, depth + 1, `${where}.not`)}, false)`;
      return `(${condition(k, v)})`;
    });
    return parts.length === 1 ? parts[0] : `(${parts.join(' and ')})`;
  }

  const sql = node(filter, 0, 'filter');
  return { sql: `coalesce(${sql}, false)`, columns };
}

/** The distinct column names a filter reads (row and old alike), for the table check. */
export const filterColumnNames = (cols: FilterColumn[]) => [...new Set(cols.map((c) => c.column))];
