// Standard Webhooks signatures (https://www.standardwebhooks.com) over
// "<webhook-id>.<webhook-timestamp>.<body>", in one of two schemes, told apart by the key's prefix:
//
//   - v1 (symmetric): HMAC-SHA256 keyed with the base64 part of a `whsec_` secret, sent "v1,<base64>";
//   - v1a (asymmetric): ed25519 with a `whsk_` secret key, sent "v1a,<base64 64-byte signature>";
//     receivers verify with the public key alone (`whpk_` + base64 of its 32 bytes).
//
// During a rotation grace period every still-valid key signs, space separated, whatever its
// scheme, so receivers holding either the old or the new key (or public key) verify the request.
import { createHmac, createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';

const HMAC_PREFIX = 'whsec_';
export const SECRET_KEY_PREFIX = 'whsk_';
export const PUBLIC_KEY_PREFIX = 'whpk_';

/**
 * A new ed25519 key pair in the Standard Webhooks spelling. The secret key is base64 of the 64 bytes
 * libsodium calls a secret key (the 32-byte seed, then the 32-byte public key); it never leaves the
 * service (sealed at rest, opened only in the dispatcher's memory).
 */
export function newEd25519Key(): { secretKey: string; publicKey: string } {
  const { privateKey } = generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' });
  const seed = Buffer.from(jwk.d!, 'base64url');
  const pub = Buffer.from(jwk.x!, 'base64url');
  return { secretKey: SECRET_KEY_PREFIX + Buffer.concat([seed, pub]).toString('base64'), publicKey: PUBLIC_KEY_PREFIX + pub.toString('base64') };
}

/** The `whpk_` public key of a `whsk_` secret key. */
export function publicKeyOf(secretKey: string): string {
  return PUBLIC_KEY_PREFIX + Buffer.from(secretKey.slice(SECRET_KEY_PREFIX.length), 'base64').subarray(32).toString('base64');
}

// Parsing a key is the costly part of an ed25519 signature; keys are few and long-lived.
const keyObjects = new Map<string, KeyObject>();
function ed25519Key(secretKey: string): KeyObject {
  let k = keyObjects.get(secretKey);
  if (!k) {
    const raw = Buffer.from(secretKey.slice(SECRET_KEY_PREFIX.length), 'base64');
    if (raw.length !== 64) throw new Error('an ed25519 signing key must hold 64 bytes');
    k = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', d: raw.subarray(0, 32).toString('base64url'), x: raw.subarray(32).toString('base64url') }, format: 'jwk' });
    if (keyObjects.size >= 1000) keyObjects.clear();
    keyObjects.set(secretKey, k);
  }
  return k;
}

export function signatureFor(secret: string, msgId: string, timestamp: number, body: string): string {
  const content = `${msgId}.${timestamp}.${body}`;
  if (secret.startsWith(SECRET_KEY_PREFIX)) return `v1a,${sign(null, Buffer.from(content), ed25519Key(secret)).toString('base64')}`;
  const key = Buffer.from(secret.startsWith(HMAC_PREFIX) ? secret.slice(HMAC_PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(content).digest('base64')}`;
}

/** The three reserved headers for one attempt. The id is the message id: the same on every attempt. */
export function signedHeaders(secrets: string[], msgId: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => signatureFor(s, msgId, timestamp, body)).join(' '),
  };
}

export const RESERVED_HEADERS = new Set(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
