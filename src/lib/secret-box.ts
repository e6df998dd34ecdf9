// AES-256-GCM encryption of secret material under the master key. The associated data binds a
// ciphertext to where it belongs (e.g. "secret:<ref>:<NAME>"), so a ciphertext copied into another
// project's row or under another name fails to decrypt instead of leaking.
//
// Layout: version byte (1) | 12-byte IV | 16-byte tag | ciphertext.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 1;

export class SecretBox {
  readonly #key: Buffer;
  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('SecretBox needs a 32-byte key');
    this.#key = Buffer.from(key);
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
    if (sealed.length < 29 || sealed[0] !== VERSION) throw new Error('not a sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, sealed.subarray(1, 13));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(sealed.subarray(13, 29));
    return Buffer.concat([decipher.update(sealed.subarray(29)), decipher.final()]);
  }

  // Never print the key, whatever logs or inspects this object.
  toJSON() {
    return '[SecretBox]';
  }
  [Symbol.for('nodejs.util.inspect.custom')]() {
    return '[SecretBox]';
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
