// One call of a callback function in the project's database, as role base_callback:
//
//   begin; set local statement_timeout = …; set local role base_callback;
//   select base._callback('schema', 'fn', $1::jsonb); commit
//
// base._callback (base-schema.sql) is a SECURITY DEFINER function owned by base_callback: inside
// it PostgreSQL refuses SET ROLE and RESET ROLE, so the callback cannot step back to this session's
// user (the service's, a superuser on managed projects). With SET ROLE alone a plain function
// granted to base_callback could RESET ROLE and make its author superuser (review, 2026-11-29).
//
// The name comes from SQL (base._check_callback already refused anything but schema.fn of plain
// identifiers) but is checked again here and each part quoted, so no string reaches the statement
// unquoted. Plain identifiers in SQL fold to lower case, so `Public.OnDone` names public.ondone —
// the same function the caller would reach by writing the name unquoted.
import pg from 'pg';
import { withTransaction, type Pool } from '../../db/index.js';

const IDENT = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** The schema and function a callback name stands for (lower-cased, as SQL folds them), or null. */
export function callbackTarget(name: string): { schema: string; fn: string } | null {
  const parts = name.split('.');
  if (parts.length !== 2 || !parts.every((p) => IDENT.test(p))) return null;
  const [schema, fn] = parts.map((p) => p.toLowerCase());
  return { schema, fn };
}

export interface CallbackPayload {
  id: string;
  status: 'delivered' | 'dead';
  delivered: boolean;
  body: string | null;
  error: string | null;
  attempts: number;
}

/** Calls the function; rejects with a readable reason (recorded on the delivery) when it fails. */
export async function callCallback(pool: Pool, name: string, payload: CallbackPayload, timeoutMs: number): Promise<void> {
  const target = callbackTarget(name);
  if (!target) throw new Error(`callback_function "${name}" is not schema.function`);
  try {
    // withTransaction closes a connection whose rollback failed instead of pooling it (it could
    // still be inside the transaction, as role base_callback)
    await withTransaction(pool, async (client) => {
      await client.query(`set local statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
      await client.query('set local role base_callback');
      await client.query('select base._callback($1, $2, $3::jsonb)', [target.schema, target.fn, JSON.stringify(payload)]);
    });
  } catch (err) {
    throw new Error(describe(err, name));
  }
}

function describe(err: unknown, name: string): string {
  const e = err as { code?: string; message?: string };
  const detail = (e.message ?? String(err)).slice(0, 500);
  switch (e.code) {
    case '42883':
      return `callback function ${name}(jsonb) does not exist`;
    case '3F000':
      return `callback function ${name}: schema does not exist`;
    case '42501':
      return `permission denied: grant usage on the schema and execute on ${name}(jsonb) to base_callback (${detail})`;
    case '57014':
      return `callback ${name} ran longer than CALLBACK_TIMEOUT`;
    case '22023':
    case '42704':
      if (/base_callback/.test(detail)) return `role base_callback is not usable by the service's database user (${detail})`;
      return `callback ${name} failed: ${detail}`;
    default:
      return e.code ? `callback ${name} raised: ${detail}` : `callback ${name} could not be called: ${detail}`;
  }
}
