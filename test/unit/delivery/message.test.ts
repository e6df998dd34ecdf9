import { describe, expect, it } from 'vitest';
import { attemptKey, decodeMessage, encodeMessage, EVENT_LONG_LIMIT, isoToMicros, MalformedMessageError } from '../../../src/delivery/message.js';

const id = '0b9f1a4e-6a1e-4c59-9a7f-3a8d2f0c1e55';
const value = Buffer.from(JSON.stringify({ id, kind: 'http', created_at: '2026-01-01T00:00:00.123456Z', method: 'GET', url: 'https://x' }));

describe('message envelope', () => {
  it('defaults a Debezium record to run 1, attempt 1, created now-due', () => {
    const m = decodeMessage({ key: Buffer.from(id), value, headers: { id: Buffer.from(id), kind: Buffer.from('http'), project: Buffer.from('proj') } });
    expect(m).toMatchObject({ id, kind: 'http', project: 'proj', run: 1, attempt: 1, firstCreatedAt: '2026-01-01T00:00:00.123456Z', dueAt: 0 });
  });
  it('round-trips through encodeMessage with the ladder changes, keeping the value bytes', () => {
    const m = decodeMessage({ key: null, value, headers: { id, kind: 'http', project: 'proj' } });
    const next = encodeMessage(m, { attempt: 2, dueAt: 1234 });
    expect(next.value).toBe(value);
    const back = decodeMessage({ key: Buffer.from(next.key), value: next.value, headers: next.headers });
    expect(back).toMatchObject({ id, run: 1, attempt: 2, dueAt: 1234, firstCreatedAt: m.firstCreatedAt });
  });
  it('refuses garbage', () => {
    expect(() => decodeMessage({ key: null, value: Buffer.from('nope'), headers: {} })).toThrow(MalformedMessageError);
    expect(() => decodeMessage({ key: null, value, headers: { id, kind: 'fax', project: 'p' } })).toThrow(/unknown kind/);
    expect(() => decodeMessage({ key: null, value, headers: { id, kind: 'http' } })).toThrow(/project/);
    expect(() => decodeMessage({ key: null, value, headers: { id, kind: 'http', project: 'p', attempt: '0' } })).toThrow(MalformedMessageError);
  });
  it('keeps microseconds of created_at', () => {
    expect(isoToMicros('2026-01-01T00:00:00.123456Z')).toBe(Date.parse('2026-01-01T00:00:00Z') * 1000 + 123456);
    expect(isoToMicros('2026-01-01T00:00:00Z')).toBe(Date.parse('2026-01-01T00:00:00Z') * 1000);
    expect(isoToMicros('yesterday')).toBeUndefined();
  });
  it('reads only numbers a delivery event can carry (avsc encodes a long within ±(2^53 − 2))', () => {
    const ordered = (seq: unknown) =>
      decodeMessage({ key: null, value: Buffer.from(JSON.stringify({ id, kind: 'webhook', created_at: '2026-01-01T00:00:00Z', ordering_key: 'row:k', seq })), headers: { id, kind: 'webhook', project: 'p' } });
    expect(ordered(EVENT_LONG_LIMIT).seq).toBe(EVENT_LONG_LIMIT);
    expect(ordered(-EVENT_LONG_LIMIT).seq).toBe(-EVENT_LONG_LIMIT);
    expect(() => ordered(Number.MAX_SAFE_INTEGER)).toThrow(/seq out of range/);
    expect(() => ordered(EVENT_LONG_LIMIT + 1)).toThrow(MalformedMessageError);
    expect(() => ordered(2 ** 60)).toThrow(/without a seq/);
    // a creation time outside about 1685–2255 is read as unknown (the attempt then counts from now)
    expect(isoToMicros('2255-01-01T00:00:00Z')).toBe(Date.parse('2255-01-01T00:00:00Z') * 1000);
    expect(isoToMicros('9999-12-31T23:59:59.999999Z')).toBeUndefined();
    expect(isoToMicros('0001-01-01T00:00:00Z')).toBeUndefined();
    expect(isoToMicros('+275760-09-13T00:00:00Z')).toBeUndefined();
  });
  it('keys an attempt by project, message id, run and attempt: one id in two projects is two attempts', () => {
    const record = (project: string) => decodeMessage({ key: Buffer.from(id), value, headers: { id: Buffer.from(id), kind: Buffer.from('http'), project: Buffer.from(project) } });
    expect(attemptKey(record('proj'))).toBe(`proj:${id}:1:1`);
    expect(attemptKey(record('other'))).not.toBe(attemptKey(record('proj')));
  });
});
