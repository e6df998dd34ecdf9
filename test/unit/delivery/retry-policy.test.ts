import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { topicNames } from '../../../src/kafka/topics.js';
import { MAX_RETRY_WAIT_MS, isExpired, planRetry, schedule } from '../../../src/delivery/retry/policy.js';
import type { OutboxMessage } from '../../../src/delivery/message.js';
import { callbackTarget } from '../../../src/delivery/callbacks/call.js';

const H = 3_600_000;
const cfg = (env: Record<string, string> = {}) => loadConfig({ APP_ENV: 'test', MASTER_KEY: Buffer.alloc(32, 1).toString('base64'), ...env });
const msg = (over: Partial<OutboxMessage> = {}): OutboxMessage => ({
  id: '0b9f1a4e-6a1e-4c59-9a7f-3a8d2f0c1e55',
  project: 'acme',
  kind: 'http',
  payload: {} as OutboxMessage['payload'],
  run: 1,
  attempt: 1,
  firstCreatedAt: new Date(NOW).toISOString(),
  dueAt: 0,
  rawValue: Buffer.from('{}'),
  ...over,
});
const NOW = Date.UTC(2026, 0, 1, 12);

describe('the default retry schedule', () => {
  const c = cfg();
  const topics = topicNames('x', c.retryDelaysMs);

  it('is 30s, 2m, 10m, 30m, 1h, 3h, 6h: 8 attempts within 10h42m30s, inside 24 h, never more than 6 h apart', () => {
    expect(c.retryDelaysMs).toEqual([30_000, 120_000, 600_000, 1_800_000, H, 3 * H, 6 * H]);
    const s = schedule(c);
    expect(s).toHaveLength(8);
    expect(s.at(-1)!.atMs).toBe(10 * H + 42 * 60_000 + 30_000);
    expect(s.at(-1)!.atMs).toBeLessThan(c.MAX_MESSAGE_AGE);
    expect(Math.max(...c.retryDelaysMs)).toBeLessThanOrEqual(MAX_RETRY_WAIT_MS);
  });

  it('sends attempt n to step n, and the 8th failure to the dead topic', () => {
    for (let attempt = 1; attempt < 8; attempt++) {
      const p = planRetry(c, topics, msg({ attempt }), {}, NOW);
      expect(p).toMatchObject({ kind: 'retry', topic: topics.retry[attempt - 1].topic, dueAt: NOW + c.retryDelaysMs[attempt - 1] });
    }
    expect(planRetry(c, topics, msg({ attempt: 8 }), {}, NOW)).toEqual({ kind: 'dead', reason: 'attempts' });
  });

  it('honours a longer Retry-After on the shortest topic that covers it, capped at 6 h', () => {
    expect(planRetry(c, topics, msg(), { retryAfterMs: 10_000 }, NOW)).toMatchObject({ dueAt: NOW + 30_000, topic: topics.retry[0].topic });
    expect(planRetry(c, topics, msg(), { retryAfterMs: 45 * 60_000 }, NOW)).toMatchObject({ dueAt: NOW + 45 * 60_000, topic: topics.retry[4].topic });
    expect(planRetry(c, topics, msg(), { retryAfterMs: 48 * H }, NOW)).toMatchObject({ dueAt: NOW + 6 * H, topic: topics.retry[6].topic });
  });

  it('ends a run dead when the next attempt would be more than 24 h after creation, and refuses late attempts', () => {
    const old = msg({ attempt: 3, firstCreatedAt: new Date(NOW - 23.9 * H).toISOString() });
    expect(planRetry(c, topics, old, {}, NOW)).toEqual({ kind: 'dead', reason: 'age' });
    expect(isExpired(c, msg({ firstCreatedAt: new Date(NOW - 24 * H - 1).toISOString() }), NOW)).toBe(true);
    expect(isExpired(c, msg({ firstCreatedAt: new Date(NOW - 23 * H).toISOString() }), NOW)).toBe(false);
  });

  it('gives a manual run its own age budget from when it started', () => {
    const retried = msg({ run: 2, firstCreatedAt: new Date(NOW - 72 * H).toISOString(), runStartedAt: NOW - H });
    expect(isExpired(c, retried, NOW)).toBe(false);
    expect(planRetry(c, topics, retried, {}, NOW).kind).toBe('retry');
  });

  it('scales every policy duration, but not a Retry-After', () => {
    const s = cfg({ RETRY_TIME_SCALE: '0.001' });
    expect(schedule(s).map((x) => x.atMs)).toEqual([0, 30, 150, 750, 2550, 6150, 16950, 38550]);
    expect(planRetry(s, topics, msg(), { retryAfterMs: 2000 }, NOW)).toMatchObject({ dueAt: NOW + 2000 });
    expect(isExpired(s, msg({ firstCreatedAt: new Date(NOW - 86_401).toISOString() }), NOW)).toBe(true);
  });
});

describe('callback names', () => {
  it('splits schema and function, folding plain identifiers to lower case (base._callback quotes them)', () => {
    expect(callbackTarget('public.on_done')).toEqual({ schema: 'public', fn: 'on_done' });
    expect(callbackTarget('App.OnDone')).toEqual({ schema: 'app', fn: 'ondone' });
  });

  it('refuses anything that is not schema.function of plain identifiers', () => {
    for (const bad of ['on_done', 'a.b.c', 'public.x; drop table t', 'public."x"', 'public.x()', '.x', 'public.', 'pub lic.x', `public.${'x'.repeat(64)}`]) {
      expect(callbackTarget(bad)).toBeNull();
    }
  });
});
