// A project's access-token signing keys, as columns of its projects row: the current key (kid,
// sealed private JWK, public JWK) and the rotated-out public keys still verifying
// (jwt_previous_keys). Made by src/projects/signing-key.ts; rotated by signing-keys.ts.
import type pg from 'pg';
import type { JWK } from 'jose';
import type { PreviousKey } from '../types.js';

type Q = Pick<pg.ClientBase, 'query'>;

export interface SigningKeysRow {
  jwt_kid: string;
  jwt_public_jwk: JWK & { kid: string };
  jwt_previous_keys: PreviousKey[] | null;
}

/** The project's keys (public parts only). */
export async function signingKeys(q: Q, ref: string): Promise<SigningKeysRow | undefined> {
  return (await q.query<SigningKeysRow>('select jwt_kid, jwt_public_jwk, jwt_previous_keys from projects where ref = $1', [ref])).rows[0];
}

/** Locks the project's row until the transaction ends and reads its public keys afresh. */
export async function lockSigningKeys(q: Q, ref: string): Promise<Omit<SigningKeysRow, 'jwt_kid'> | undefined> {
  return (await q.query<Omit<SigningKeysRow, 'jwt_kid'>>('select jwt_public_jwk, jwt_previous_keys from projects where ref = $1 for update', [ref])).rows[0];
}

export interface NewCurrentKey {
  kid: string;
  privateJwkSealed: Buffer;
  publicJwk: JWK;
  /** the rotated-out keys still verifying, newest first */
  previous: PreviousKey[];
}

/** Makes `k` the project's current key. */
export async function setSigningKeys(q: Q, ref: string, k: NewCurrentKey): Promise<void> {
  await q.query(
    'update projects set jwt_kid = $2, jwt_private_jwk_enc = $3, jwt_public_jwk = $4, jwt_previous_keys = $5, updated_at = now() where ref = $1',
    [ref, k.kid, k.privateJwkSealed, k.publicJwk, JSON.stringify(k.previous)],
  );
}
