import { describe, expect, it } from 'vitest';
import { classifyStatus, MAX_RETRY_AFTER_MS, parseRetryAfter } from '../../../src/delivery/channels/status-classes.js';
import { classifyError } from '../../../src/delivery/channels/http-send.js';
import { BlockedTargetError } from '../../../src/outbound/agent.js';

describe('classifyStatus (docs/delivery.md, Classification)', () => {
  it.each([
    [200, 'delivered'], [201, 'delivered'], [204, 'delivered'], [299, 'delivered'],
    [301, 'dead'], [302, 'dead'], [304, 'dead'], [307, 'dead'], [308, 'dead'],
    [400, 'dead'], [401, 'dead'], [403, 'dead'], [404, 'dead'], [410, 'dead'], [413, 'dead'], [422, 'dead'], [451, 'dead'],
    [408, 'failed'], [409, 'failed'], [425, 'failed'], [429, 'failed'],
    [500, 'failed'], [502, 'failed'], [503, 'failed'], [504, 'failed'], [599, 'failed'],
    [101, 'failed'], [600, 'failed'],
  ])('%i → %s', (status, outcome) => {
    expect(classifyStatus(status)).toBe(outcome);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it('reads delta-seconds and HTTP dates', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:30 GMT', now)).toBe(90_000);
    expect(parseRetryAfter(['5', '9'], now)).toBe(5000);
  });
  it('reads at most a year, however far the answer asks', () => {
    expect(parseRetryAfter(String(366 * 86_400), now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('99999999999999999999', now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Fri, 31 Dec 9999 23:59:59 GMT', now)).toBe(MAX_RETRY_AFTER_MS);
  });
  it('ignores what is not a delay', () => {
    for (const v of [undefined, '', 'soon', '-5', '1.5', 'Wed, 31 Dec 2025 23:00:00 GMT']) expect(parseRetryAfter(v, now)).toBeUndefined();
  });
});

describe('classifyError', () => {
  it('a blocked target is dead', () => {
    const err = new TypeError('fetch failed', { cause: new BlockedTargetError('localhost', '127.0.0.1', 'loopback') });
    expect(classifyError(err, 1000)).toMatchObject({ outcome: 'dead', reason: 'blocked_target', error: expect.stringMatching(/^blocked target: .*loopback/) });
  });
  it('timeouts and network errors are failed', () => {
    // timed out: whatever undici threw when the exchange's timer aborted it
    expect(classifyError(new Error('Request aborted'), 250, true)).toEqual({ outcome: 'failed', reason: 'timeout', error: 'timeout after 250 ms' });
    expect(classifyError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.2:1'), { code: 'ECONNREFUSED' }), 1000)).toMatchObject({ outcome: 'failed', reason: 'network', error: expect.stringContaining('ECONNREFUSED') });
  });
});
