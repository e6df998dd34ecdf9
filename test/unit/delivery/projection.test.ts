import avro from 'avsc';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../../src/config.js';
import { describe, expect, it } from 'vitest';
import { decodeEvent, encodeEvent, type DeliveryAttempted, type DeliveryEvent } from '../../../src/delivery/events.js';
import { fold } from '../../../src/delivery/projection/fold.js';

const common = { message_id: '0b9f1a4e-6a1e-4c59-9a7f-3a8d2f0c1e55', project: 'p', kind: 'http', run: 1, webhook_id: null, target: 'https://x/{{secret:A}}', method: 'POST', callback_function: null, message_created_at: 1_700_000_000_123_456 };
const attempted = (attempt: number, outcome: DeliveryAttempted['outcome'], finishedAt = 2 + attempt, run = 1): DeliveryEvent => ({
  type: 'DeliveryAttempted',
  version: 1,
  data: { ...common, run, attempt, outcome, status: outcome, final: outcome !== 'failed', http_status: outcome === 'delivered' ? 200 : 503, smtp_code: null, error: outcome === 'delivered' ? null : 'HTTP 503', response_body: null, retry_after_ms: null, next_attempt_at: null, started_at: 1, finished_at: finishedAt, duration_ms: 1 },
});
const queued: DeliveryEvent = { type: 'DeliveryQueued', version: 1, data: { ...common, queued_at: 1 } };

describe('delivery events', () => {
  it('round-trip through Avro with type and schema version in headers', () => {
    for (const ev of [queued, attempted(1, 'delivered')]) {
      const rec = encodeEvent(ev);
      expect(rec.headers).toMatchObject({ 'event-type': ev.type, 'schema-version': '2' });
      const back = decodeEvent(rec.headers, rec.value);
      expect({ ...back!.data }).toEqual({ ordering_key: null, seq: null, ...ev.data });
    }
    // an event written before ordered delivery (version 1) still reads, with no key
    for (const ev of [queued, attempted(1, 'delivered')]) {
      const file = ev.type === 'DeliveryQueued' ? 'delivery-queued.avsc' : 'delivery-attempted.avsc';
      const v1 = avro.Type.forSchema(JSON.parse(readFileSync(path.join(repoRoot, 'schemas', file), 'utf8')));
      const back = decodeEvent({ 'event-type': ev.type, 'schema-version': '1' }, v1.toBuffer(ev.data));
      expect({ ...back!.data }).toEqual({ ...ev.data, ordering_key: null, seq: null });
    }
    expect(decodeEvent({ 'event-type': 'Unknown', 'schema-version': '1' }, Buffer.alloc(1))).toBeNull();
  });

  it('records a value a field cannot carry as null, reported, when that field may be null; throws otherwise', () => {
    const bad = attempted(1, 'failed');
    // the first such bug (closed in parseRetryAfter): a Retry-After beyond what an Avro long carries here
    Object.assign(bad.data, { retry_after_ms: 2 ** 60, webhook_id: 12345 });
    const reports: Record<string, unknown>[] = [];
    const rec = encodeEvent(bad, (o) => reports.push(o));
    expect(reports).toEqual([{ event: 'DeliveryAttempted', message: common.message_id, project: 'p', fields: ['webhook_id', 'retry_after_ms'] }]);
    expect({ ...decodeEvent(rec.headers, rec.value)!.data }).toEqual({ ordering_key: null, seq: null, ...bad.data, retry_after_ms: null, webhook_id: null });
    // without a place to report it, nothing is changed silently
    expect(() => encodeEvent(bad)).toThrow();
    // a field that may not be null is never made up
    const worse = attempted(1, 'failed');
    Object.assign(worse.data, { attempt: 2 ** 60, retry_after_ms: 2 ** 60 });
    expect(() => encodeEvent(worse, (o) => reports.push(o))).toThrow();
    expect(reports).toHaveLength(1);
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

function permutations<T>(xs: T[]): T[][] {
  if (xs.length <= 1) return [xs];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));
}

/** The folded state for every order of `events` (the upsert's side: test/integration/delivery-projection.test.ts). */
const everyOrder = (events: DeliveryEvent[]) => permutations(events).map((order) => fold(order));

describe('fold: one attempt made twice, and the state only moving forward', () => {
  it('a final outcome of an attempt is never overwritten by a failed copy of the same attempt, in any order', () => {
    for (const s of everyOrder([queued, attempted(1, 'failed', 10), attempted(1, 'delivered', 11)])) {
      expect(s.rows).toHaveLength(1);
      expect(s.rows[0]).toMatchObject({ run: 1, attempts: 1, status: 'delivered', delivered_at: 11 });
      // the history shows one outcome for the attempt, the one the row shows
      expect(s.attempts).toEqual([expect.objectContaining({ attempt: 1, outcome: 'delivered', finished_at: 11 })]);
    }
    for (const s of everyOrder([attempted(2, 'dead', 20), attempted(2, 'failed', 19)])) {
      expect(s.rows[0]).toMatchObject({ attempts: 2, status: 'dead' });
      expect(s.attempts).toEqual([expect.objectContaining({ attempt: 2, outcome: 'dead' })]);
    }
  });

  it('attempts that follow the failed copy do not reopen a run that ended', () => {
    // attempt 2 delivered; its failed copy went up the ladder and attempt 3 failed, attempt 4 ended dead
    const events = [attempted(2, 'delivered', 20), attempted(2, 'failed', 21), attempted(3, 'failed', 30), attempted(4, 'dead', 40)];
    for (const s of everyOrder(events)) {
      expect(s.rows[0]).toMatchObject({ attempts: 2, status: 'delivered', delivered_at: 20 });
      expect(s.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
        [2, 'delivered'],
        [3, 'failed'],
        [4, 'dead'],
      ]);
    }
  });

  it('between two finals of one run: delivered, then the earliest attempt, then the earliest finish', () => {
    for (const s of everyOrder([attempted(3, 'dead', 30), attempted(5, 'delivered', 50), attempted(4, 'delivered', 45)])) {
      expect(s.rows[0]).toMatchObject({ attempts: 4, status: 'delivered', delivered_at: 45 });
    }
    for (const s of everyOrder([attempted(1, 'delivered', 12), attempted(1, 'delivered', 11)])) {
      expect(s.rows[0]).toMatchObject({ status: 'delivered', updated_at: 11 });
      expect(s.attempts).toEqual([expect.objectContaining({ finished_at: 11 })]);
    }
  });

  it('a new run (manual retry) moves past the final outcome of the previous one, and only forward', () => {
    const retried: DeliveryEvent = { type: 'DeliveryQueued', version: 1, data: { ...common, run: 2, queued_at: 100 } };
    for (const s of everyOrder([attempted(8, 'dead', 80), retried, attempted(1, 'failed', 60)])) {
      expect(s.rows[0]).toMatchObject({ run: 2, attempts: 0, status: 'pending' });
    }
    for (const s of everyOrder([attempted(8, 'dead', 80), retried, attempted(1, 'failed', 110, 2)])) {
      expect(s.rows[0]).toMatchObject({ run: 2, attempts: 1, status: 'failed' });
    }
  });

  it('a failed attempt moves a pending row on, and a later failed attempt moves it further', () => {
    for (const s of everyOrder([queued, attempted(1, 'failed', 10), attempted(2, 'failed', 20)])) {
      expect(s.rows[0]).toMatchObject({ attempts: 2, status: 'failed', updated_at: 20 });
    }
  });
});

describe('fold: one message id in two projects', () => {
  it('keeps a row and an attempt history per project, whatever the order (message ids are chosen in the projects’ databases)', () => {
    const other = (ev: DeliveryEvent): DeliveryEvent => ({ ...ev, data: { ...ev.data, project: 'q', target: 'https://other/' } }) as DeliveryEvent;
    // project p delivered at once; project q failed, then ended dead, with the same message id
    const events = [attempted(1, 'delivered', 10), other(attempted(1, 'failed', 11)), other(attempted(2, 'dead', 20))];
    for (const s of everyOrder(events)) {
      expect(s.rows.map((r) => [r.project_ref, r.id, r.status, r.attempts, r.target])).toEqual([
        ['p', common.message_id, 'delivered', 1, 'https://x/{{secret:A}}'],
        ['q', common.message_id, 'dead', 2, 'https://other/'],
      ]);
      expect(s.attempts.map((a) => [a.project_ref, a.attempt, a.outcome])).toEqual([
        ['p', 1, 'delivered'],
        ['q', 1, 'failed'],
        ['q', 2, 'dead'],
      ]);
    }
  });
});
