// Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
// "<webhook-id>.<webhook-timestamp>.<body>" keyed with the base64 part of the whsec_ secret,
// sent as "v1,<base64>". During a rotation grace period every still-valid secret signs, space
// separated, so receivers holding either the old or the new secret verify the request.
import { createHmac } from 'node:crypto';

const PREFIX = 'whsec_';

export function signatureFor(secret: string, msgId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${msgId}.${timestamp}.${body}`).digest('base64')}`;
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
