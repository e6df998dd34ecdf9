// Project secrets in the control database (secrets): a name and its value, sealed by the caller
// with aad.secret(ref, name). Nothing here reads a value back: only the dispatcher does, to fill
// {{secret:NAME}} placeholders (src/delivery/channels/).
import type pg from 'pg';

type Q = Pick<pg.ClientBase, 'query'>;

/** What the owner may see of a secret: never its value. */
export interface SecretMeta {
  name: string;
  created_at: Date;
  updated_at: Date;
}

/** Creates or replaces the secret `name`; `created` says which. */
export async function upsertSecret(q: Q, ref: string, name: string, valueSealed: Buffer): Promise<SecretMeta & { created: boolean }> {
  const r = await q.query<SecretMeta & { created: boolean }>(
    `insert into secrets (project_ref, name, value_enc) values ($1, $2, $3)
     on conflict (project_ref, name) do update set value_enc = excluded.value_enc, updated_at = now()
     returning name, created_at, updated_at, (xmax = 0) as created`,
    [ref, name, valueSealed],
  );
  return r.rows[0];
}

/** The project's secrets by name. */
export async function listSecrets(q: Q, ref: string): Promise<SecretMeta[]> {
  return (await q.query<SecretMeta>('select name, created_at, updated_at from secrets where project_ref = $1 order by name', [ref])).rows;
}

/** Deletes the secret `name`; false when there was none. */
export async function deleteSecret(q: Q, ref: string, name: string): Promise<boolean> {
  const r = await q.query('delete from secrets where project_ref = $1 and name = $2', [ref, name]);
  return (r.rowCount ?? 0) > 0;
}
