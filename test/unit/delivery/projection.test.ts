import { describe, expect, it } from 'vitest';
import { decodeEvent, encodeEvent, type DeliveryAttempted, type DeliveryEvent } from '../../../src/delivery/events.js';
import { fold } from '../../../src/delivery/projection.js';

const common = { message_id: '0b9f1a4e-6a1e-4c59-9a7f-3a8d2f0c1e55', project: 'p', kind: 'http', run: 1, webhook_id: null, target: 'https://x/{{secret:A}}', method: 'POST', callback_function: null, message_created_at: 1_700_000_000_123_456 };
const attempted = (attempt: number, outcome: DeliveryAttempted['outcome']): DeliveryEvent => ({
  type: 'DeliveryAttempted',
  version: 1,
  data: { ...common, attempt, outcome, status: outcome, final: outcome !== 'failed', http_status: 500, smtp_code: null, error: 'HTTP 500', response_body: null, retry_after_ms: null, next_attempt_at: null, started_at: 1, finished_at: 2 + attempt, duration_ms: 1 },
});
const queued: DeliveryEvent = { type: 'DeliveryQueued', version: 1, data: { ...common, queued_at: 1 } };

describe('delivery events', () => {
  it('round-trip through Avro with type and schema version in headers', () => {
    for (const ev of [queued, attempted(1, 'delivered')]) {
      const rec = encodeEvent(ev);
      expect(rec.headers).toMatchObject({ 'event-type': ev.type, 'schema-version': '1' });
      const back = decodeEvent(rec.headers, rec.value);
      expect({ ...back!.data }).toEqual(ev.data);
    }
    expect(decodeEvent({ 'event-type': 'Unknown', 'schema-version': '1' }, Buffer.alloc(1))).toBeNull();
  });
});

describe('fold', () => {
  it('keeps the newest state per delivery regardless of event order, and every attempt', () => {
    const a = fold([attempted(2, 'delivered'), queued, attempted(1, 'failed')]);
    expect(a.rows).toHaveLength(1);
    expect(a.rows[0]).toMatchObject({ attempts: 2, status: 'delivered' });
    expect(a.attempts.map((x) => x.attempt).sort()).toEqual([1, 2]);
    expect(fold([queued]).rows[0]).toMatchObject({ attempts: 0, status: 'pending' });
  });
});
