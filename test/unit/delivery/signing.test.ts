import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { createPublicKey, verify } from 'node:crypto';
import { newEd25519Key, publicKeyOf, signedHeaders } from '../../../src/delivery/channels/signature.js';

const secret = (b: number) => `whsec_${Buffer.alloc(32, b).toString('base64')}`;

describe('Standard Webhooks signing', () => {
  it('is verified by the official package, with one or two secrets', () => {
    const body = JSON.stringify({ type: 'INSERT', record: { id: 1, s: 'é' } });
    const one = signedHeaders([secret(1)], 'msg-1', body);
    expect(one['webhook-id']).toBe('msg-1');
    expect(one['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    expect(new Webhook(secret(1)).verify(body, one)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret(2)).verify(body, one)).toThrow();

    const both = signedHeaders([secret(2), secret(1)], 'msg-1', body);
    expect(both['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(secret(1)).verify(body, both)).toBeTruthy();
    expect(new Webhook(secret(2)).verify(body, both)).toBeTruthy();
    expect(() => new Webhook(secret(1)).verify(body + ' ', both)).toThrow();
  });
});

describe('Standard Webhooks asymmetric signing (v1a, ed25519)', () => {
  // verified with node:crypto and the public key only, not with the service's code
  const verifyV1a = (publicKey: string, headers: Record<string, string>, body: string) => {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKey.slice(5), 'base64').toString('base64url') }, format: 'jwk' });
    const content = Buffer.from(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`);
    return headers['webhook-signature']
      .split(' ')
      .filter((s) => s.startsWith('v1a,'))
      .some((s) => verify(null, content, key, Buffer.from(s.slice(4), 'base64')));
  };

  it('signs with a whsk_ key, verifiable with its whpk_ public key, beside a v1 secret', () => {
    const a = newEd25519Key();
    const b = newEd25519Key();
    expect(a.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    expect(a.secretKey).toMatch(/^whsk_/);
    expect(Buffer.from(a.secretKey.slice(5), 'base64')).toHaveLength(64);
    expect(publicKeyOf(a.secretKey)).toBe(a.publicKey);
    const body = JSON.stringify({ type: 'UPDATE', record: { id: 1, s: 'é' } });
    const h = signedHeaders([a.secretKey, secret(1)], 'msg-2', body);
    const [v1a, v1] = h['webhook-signature'].split(' ');
    expect(v1a).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    expect(v1).toMatch(/^v1,/);
    expect(verifyV1a(a.publicKey, h, body)).toBe(true);
    expect(verifyV1a(b.publicKey, h, body)).toBe(false);
    expect(verifyV1a(a.publicKey, h, body + ' ')).toBe(false);
    // the official package verifies the v1 entry and skips the v1a one
    expect(new Webhook(secret(1)).verify(body, h)).toEqual(JSON.parse(body));
  });
});
