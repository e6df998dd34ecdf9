// Endpoint protection's pure parts: what an endpoint is, what counts as its fault, the held-ms
// envelope header and how it extends the age budget. The behaviour itself (circuit, holds, rate
// limit, auto-disable) is tested on the real stack: endpoint-protection and endpoint-disable tests.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { decodeMessage, encodeMessage, type OutboxMessage } from '../../../src/delivery/message.js';
import { deadline, isExpired } from '../../../src/delivery/retry/policy.js';
import { endpointOf, isEndpointFault } from '../../../src/delivery/endpoints/keys.js';
import { toleranceMs } from '../../../src/delivery/endpoints/rate.js';

const cfg = loadConfig({ APP_ENV: 'test', MASTER_KEY: Buffer.alloc(32, 1).toString('base64') });
const ID = '0b9f1a4e-6a1e-4c59-9a7f-3a8d2f0c1e55';
const record = (headers: Record<string, string>) => ({ key: Buffer.from(ID), value: Buffer.from(JSON.stringify({ id: ID, kind: 'http', created_at: '2026-01-01T00:00:00Z' })), headers });

describe('endpoints', () => {
  it('are a webhook, or a target host of base.http_request per project; email has none', () => {
    expect(endpointOf({ kind: 'webhook', project: 'acme' }, { target: 'https://h.test/x', method: 'POST', webhookId: ID })).toEqual({ project: 'acme', key: `webhook:${ID}`, webhookId: ID });
    expect(endpointOf({ kind: 'http', project: 'acme' }, { target: 'https://API.Example.com:8443/v1?q=1', method: 'POST', webhookId: null })).toEqual({ project: 'acme', key: 'host:api.example.com:8443', webhookId: null });
    expect(endpointOf({ kind: 'http', project: 'acme' }, { target: 'https://api.example.com:443/v1', method: 'POST', webhookId: null })?.key).toBe('host:api.example.com');
    expect(endpointOf({ kind: 'http', project: 'acme' }, { target: 'not a url {{secret:X}}', method: 'POST', webhookId: null })).toBeNull();
    expect(endpointOf({ kind: 'email', project: 'acme' }, { target: 'ada@example.com', method: null, webhookId: null })).toBeNull();
  });

  it("count as the endpoint's fault only what says it is down or overloaded", () => {
    expect(isEndpointFault({ outcome: 'failed', reason: 'http_status', httpStatus: 503 })).toBe(true);
    expect(isEndpointFault({ outcome: 'failed', reason: 'http_status', httpStatus: 429 })).toBe(true);
    expect(isEndpointFault({ outcome: 'failed', reason: 'http_status', httpStatus: 408 })).toBe(true);
    expect(isEndpointFault({ outcome: 'failed', reason: 'http_status', httpStatus: 425 })).toBe(true);
    expect(isEndpointFault({ outcome: 'failed', reason: 'timeout' })).toBe(true);
    expect(isEndpointFault({ outcome: 'failed', reason: 'network' })).toBe(true);
    // retried, but the receiver's answer about this message, not the receiver being down
    expect(isEndpointFault({ outcome: 'failed', reason: 'http_status', httpStatus: 409 })).toBe(false);
    expect(isEndpointFault({ outcome: 'dead', reason: 'http_status', httpStatus: 404 })).toBe(false);
    expect(isEndpointFault({ outcome: 'failed', reason: 'unknown_secret' })).toBe(false);
    expect(isEndpointFault({ outcome: 'failed', reason: 'internal' })).toBe(false);
    expect(isEndpointFault({ outcome: 'dead', reason: 'blocked_target' })).toBe(false);
    expect(isEndpointFault({ outcome: 'delivered', reason: 'accepted', httpStatus: 200 })).toBe(false);
  });

  it('let at most ~32 attempts of one endpoint wait in a process, and never more than a second', () => {
    expect(toleranceMs(5)).toBe(1000);
    expect(toleranceMs(1000)).toBe(32);
  });
});

describe('held time', () => {
  it('travels in held-ms and the released marker, kept within a run and dropped by a new run', () => {
    const m = decodeMessage(record({ id: ID, kind: 'http', project: 'acme', 'held-ms': '90000', released: 'probe' }));
    expect(m).toMatchObject({ heldMs: 90_000, released: 'probe' });
    expect(encodeMessage(m, { attempt: 2 }).headers['held-ms']).toBe('90000');
    expect(encodeMessage(m, { run: 2 }).headers['held-ms']).toBeUndefined();
    // the releaser's marker is not carried on: a retry of a probe is an ordinary message
    expect(encodeMessage(m, { attempt: 2 }).headers.released).toBeUndefined();
    expect(decodeMessage(record({ id: ID, kind: 'http', project: 'acme', released: 'bogus' })).released).toBeUndefined();
  });

  it('is added to the age budget, so waiting for the endpoint does not consume it', () => {
    const created = Date.UTC(2026, 0, 1);
    const base = { id: ID, project: 'acme', kind: 'http' as const, payload: {} as OutboxMessage['payload'], run: 1, attempt: 3, firstCreatedAt: new Date(created).toISOString(), dueAt: 0, rawValue: Buffer.from('{}') };
    const day = cfg.MAX_MESSAGE_AGE;
    expect(deadline(cfg, base)).toBe(created + day);
    expect(deadline(cfg, { ...base, heldMs: 3 * day })).toBe(created + 4 * day);
    const at = created + 2 * day;
    expect(isExpired(cfg, base, at)).toBe(true);
    expect(isExpired(cfg, { ...base, heldMs: 3 * day }, at)).toBe(false);
  });
});
