// A new access-token signing key pair (ES256) for a project: made when the project is created and
// at every rotation (src/sso/sessions/signing-keys.ts). The private half is only ever stored sealed.
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { aad, type SecretBox } from '../lib/secret-box.js';

export interface NewSigningKey {
  kid: string;
  publicJwk: JWK & { kid: string };
  privateJwkSealed: (box: SecretBox, ref: string) => Buffer;
}

export async function newSigningKey(): Promise<NewSigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = randomUUID();
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'ES256' };
  return { kid, publicJwk, privateJwkSealed: (box, ref) => box.seal(JSON.stringify(privateJwk), aad.jwtKey(ref)) };
}
