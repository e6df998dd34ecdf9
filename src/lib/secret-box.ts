// AES-256-GCM encryption of secret material under the master key. The associated data binds a
// ciphertext to where it belongs (e.g. "secret:<ref>:<NAME>"), so a ciphertext copied into another
// project's row or under another name fails to decrypt instead of leaking.
//
// Layout: version byte (1) | 12-byte IV | 16-byte tag | ciphertext.
//
// Rotation (docs/operations.md, "Rotate the master key"): the box seals with the current key only,
// and opens with the current key or, failing its authentication, with each previous key
// (MASTER_KEY_PREVIOUS) in turn; GCM's tag tells a wrong key apart, so no key id is stored. `npm run admin -- reseal` then re-encrypts every
// sealed column under the current key, after which the previous keys can be dropped.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 1;

export class SecretBox {
  readonly #key: Buffer;
  readonly #previous: Buffer[];
  constructor(key: Buffer, previous: Buffer[] = []) {
    for (const k of [key, ...previous]) if (k.length !== 32) throw new Error('SecretBox needs 32-byte keys');
    this.#key = Buffer.from(key);
    this.#previous = previous.map((k) => Buffer.from(k));
  }

  /** How many previous keys this box can still open with. */
  get previousKeys(): number {
    return this.#previous.length;
  }

  seal(plaintext: string | Buffer, aad: string): Buffer {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    const ct = Buffer.concat([cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), ct]);
  }

  open(sealed: Buffer, aad: string): string {
    return this.openBytes(sealed, aad).toString('utf8');
  }

  openBytes(sealed: Buffer, aad: string): Buffer {
    return this.openWithKey(sealed, aad).plaintext;
  }

  /**
   * Opens `sealed` and says whether the current key did it (`current: false`: a previous key did,
   * and the value should be sealed again). Throws when no key opens it.
   */
  openWithKey(sealed: Buffer, aad: string): { plaintext: Buffer; current: boolean } {
    if (sealed.length < 29 || sealed[0] !== VERSION) throw new Error('not a sealed value');
    const current = tryOpen(this.#key, sealed, aad);
    if (current) return { plaintext: current, current: true };
    for (const key of this.#previous) {
      const plaintext = tryOpen(key, sealed, aad);
      if (plaintext) return { plaintext, current: false };
    }
    throw new Error('sealed value does not authenticate under any configured master key');
  }

  // Never print the key, whatever logs or inspects this object.
  toJSON() {
    return '[SecretBox]';
  }
  [Symbol.for('nodejs.util.inspect.custom')]() {
    return '[SecretBox]';
  }
}

function tryOpen(key: Buffer, sealed: Buffer, aad: string): Buffer | null {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 13));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(sealed.subarray(13, 29));
  const body = decipher.update(sealed.subarray(29));
  try {
    return Buffer.concat([body, decipher.final()]);
  } catch {
    return null; // authentication failed: another key, another place, or tampered
  }
}

/** Associated data for each kind of sealed value, in one place so writers and readers agree. */
export const aad = {
  secret: (ref: string, name: string) => `secret:${ref}:${name}`,
  smtpPassword: (ref: string) => `smtp:${ref}`,
  signingSecret: (webhookId: string) => `whsec:${webhookId}`,
  clientSecret: (providerId: string) => `oidc-client-secret:${providerId}`,
  databaseUrl: (ref: string) => `database-url:${ref}`,
  jwtKey: (ref: string) => `jwt-key:${ref}`,
  flowVerifier: (flowId: string) => `sso-flow:${flowId}`,
};
