import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { signedHeaders } from '../../../src/delivery/channels/signature.js';

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
