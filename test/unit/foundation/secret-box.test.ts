import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../../../src/lib/secret-box.js';

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  it('round-trips and never stores the plaintext', () => {
    const sealed = box.seal('hunter2-very-secret', 'secret:p:NAME');
    expect(sealed.includes(Buffer.from('hunter2-very-secret'))).toBe(false);
    expect(box.open(sealed, 'secret:p:NAME')).toBe('hunter2-very-secret');
  });

  it('refuses a ciphertext moved to another project or name', () => {
    const sealed = box.seal('v', 'secret:a:NAME');
    expect(() => box.open(sealed, 'secret:b:NAME')).toThrow();
    expect(() => box.open(sealed, 'secret:a:OTHER')).toThrow();
  });

  it('refuses a tampered ciphertext and another key', () => {
    const sealed = box.seal('value', 'x');
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1] ^= 1;
    expect(() => box.open(tampered, 'x')).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 'x')).toThrow();
  });

  it('opens values sealed under a previous key, says so, and seals under the current one', () => {
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const before = new SecretBox(oldKey).seal('value', 'x');
    const rotating = new SecretBox(newKey, [oldKey]);
    expect(rotating.openWithKey(before, 'x')).toEqual({ plaintext: Buffer.from('value'), current: false });
    const after = rotating.seal('value', 'x');
    expect(rotating.openWithKey(after, 'x').current).toBe(true);
    expect(new SecretBox(newKey).open(after, 'x')).toBe('value');
    expect(() => new SecretBox(oldKey).open(after, 'x')).toThrow();
    // a previous key does not loosen the binding to the associated data
    expect(() => rotating.open(before, 'y')).toThrow(/any configured master key/);
  });

  it('does not print its key', () => {
    expect(JSON.stringify({ box })).toBe('{"box":"[SecretBox]"}');
  });
});
