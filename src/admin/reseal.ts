// Master-key rotation, step 2: re-encrypt every sealed column of the control database under the
// current MASTER_KEY (docs/operations.md, "Rotate the master key").
//
//   0. restart every process with MASTER_KEY=<old> and MASTER_KEY_PREVIOUS=<new> (all can open both);
//   1. restart every process with MASTER_KEY=<new> and MASTER_KEY_PREVIOUS=<old>: they seal with the
//      new key and open with either;
//   2. `npm run admin -- reseal`: each value the current key cannot open is opened with a previous
//      key and written back sealed under the current one;
//   3. `npm run admin -- reseal --check` reports 0 `previous` and 0 `unreadable`; then drop
//      MASTER_KEY_PREVIOUS and restart.
//
// Each row is rewritten with a compare-and-set on its old ciphertext, so a value changed through the
// API meanwhile (already sealed under the new key) is left alone, not overwritten. Plaintext never
// leaves this process and is never logged; the report holds counts only.
import type { AppContext } from '../context.js';
import { aad } from '../lib/secret-box.js';

interface SealedColumn {
  /** table.column, as reported */
  name: string;
  /** selects `pk` (text) and `enc` (bytea) of every row with a value */
  select: string;
  /** sets the column to $1 where the row is $2 and the column still holds $3 */
  update: string;
  aad(row: Record<string, string>): string;
}

/** `key`: an SQL expression naming the row as text; `extra`: further columns the AAD needs. */
function sealed(table: string, column: string, key: string, aadOf: (row: Record<string, string>) => string, extra = ''): SealedColumn {
  return {
    name: `${table}.${column}`,
    select: `select ${key} as pk${extra ? `, ${extra}` : ''}, ${column} as enc from ${table} where ${column} is not null`,
    update: `update ${table} set ${column} = $1 where ${key} = $2 and ${column} = $3`,
    aad: aadOf,
  };
}

// Every *_enc column of migrations/*.sql. A unit test checks this list against the migrations, so a
// new sealed column cannot be forgotten here.
export const SEALED_COLUMNS: SealedColumn[] = [
  sealed('projects', 'database_url_enc', 'ref', (r) => aad.databaseUrl(r.pk)),
  sealed('projects', 'jwt_private_jwk_enc', 'ref', (r) => aad.jwtKey(r.pk)),
  sealed('secrets', 'value_enc', "project_ref || '/' || name", (r) => aad.secret(r.project_ref, r.name), 'project_ref, name'),
  sealed('smtp_settings', 'password_enc', 'project_ref', (r) => aad.smtpPassword(r.pk)),
  sealed('webhook_signing_secrets', 'secret_enc', 'id::text', (r) => aad.signingSecret(r.webhook_id), 'webhook_id::text as webhook_id'),
  sealed('sso_providers', 'client_secret_enc', 'id::text', (r) => aad.clientSecret(r.pk)),
  sealed('sso_flows', 'idp_code_verifier_enc', 'id::text', (r) => aad.flowVerifier(r.pk)),
];

export interface ColumnReport {
  /** opened by the current key */
  current: number;
  /** opened by a previous key: re-sealed (or, with check, still to re-seal) */
  previous: number;
  /** changed by someone else between read and write: already under the current key, left alone */
  skipped: number;
  /** opened by no configured key */
  unreadable: number;
}

export async function reseal(ctx: AppContext, opts: { check?: boolean } = {}): Promise<{ check: boolean; columns: Record<string, ColumnReport>; ok: boolean }> {
  const columns: Record<string, ColumnReport> = {};
  let ok = true;
  for (const col of SEALED_COLUMNS) {
    const report: ColumnReport = { current: 0, previous: 0, skipped: 0, unreadable: 0 };
    const rows = (await ctx.db.query(col.select)).rows as (Record<string, string> & { enc: Buffer })[];
    for (const row of rows) {
      let opened: { plaintext: Buffer; current: boolean };
      try {
        opened = ctx.box.openWithKey(row.enc, col.aad(row));
      } catch {
        report.unreadable++;
        ctx.log.error({ column: col.name, row: row.pk }, 'sealed value opens with no configured master key');
        continue;
      }
      if (opened.current) {
        report.current++;
        continue;
      }
      report.previous++;
      if (opts.check) continue;
      const resealed = ctx.box.seal(opened.plaintext, col.aad(row));
      const r = await ctx.db.query(col.update, [resealed, row.pk, row.enc]);
      if (r.rowCount === 0) {
        report.previous--;
        report.skipped++;
      }
    }
    columns[col.name] = report;
    if (report.unreadable > 0 || (opts.check && report.previous > 0)) ok = false;
  }
  ctx.log.info({ check: !!opts.check, columns }, opts.check ? 'master key check finished' : 'reseal finished');
  return { check: !!opts.check, columns, ok };
}
