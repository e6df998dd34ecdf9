import { describe, expect, it } from 'vitest';
import { loadConfig, parseDuration, redactedConfig } from '../../../src/config.js';

const base = { APP_ENV: 'test', STACK_DIR: '/tmp/integrations-unit-config', MASTER_KEY: Buffer.alloc(32, 7).toString('base64') };

describe('config', () => {
  it('applies defaults and derives the public URL', () => {
    const cfg = loadConfig(base);
    expect(cfg.PORT).toBe(8000);
    expect(cfg.publicUrl).toBe('http://127.0.0.1:8000');
    expect(cfg.retryDelaysMs).toEqual([30_000, 120_000, 600_000, 1_800_000, 3_600_000, 10_800_000, 21_600_000]);
    expect(cfg.MAX_MESSAGE_AGE).toBe(86_400_000);
    expect(cfg.external).toBe(false);
    expect(Object.isFrozen(cfg)).toBe(true);
  });

  it('names the bad key in its message', () => {
    expect(() => loadConfig({ ...base, PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ ...base, RETRY_DELAYS: '30s,forever' })).toThrow(/RETRY_DELAYS/);
    expect(() => loadConfig({ ...base, RETRY_DELAYS: '30s,7h,1h,1h,1h,1h,1h' })).toThrow(/at most 6h/);
    expect(() => loadConfig({ ...base, MASTER_KEY: 'c2hvcnQ=' })).toThrow(/MASTER_KEY/);
    expect(() => loadConfig({ ...base, MASTER_KEY_PREVIOUS: 'c2hvcnQ=' })).toThrow(/MASTER_KEY_PREVIOUS: key 1/);
    expect(() => loadConfig({ ...base, LEDGER_RETENTION: '3d' })).toThrow(/LEDGER_RETENTION: at least 8d/);
    // statement_timeout takes at most 2^31 ms; past the bound every enable would answer a bare 503
    expect(() => loadConfig({ ...base, OUTBOX_SLOT_WAIT: '30d' })).toThrow(/OUTBOX_SLOT_WAIT: at most 1h/);
    expect(loadConfig({ ...base, OUTBOX_SLOT_WAIT: '1h' }).OUTBOX_SLOT_WAIT).toBe(3_600_000);
    expect(loadConfig({ ...base, OUTBOX_SLOT_WAIT: '0' }).OUTBOX_SLOT_WAIT).toBe(0);
  });

  it('reads previous master keys for a rotation, without the current one', () => {
    const previous = Buffer.alloc(32, 9).toString('base64');
    const cfg = loadConfig({ ...base, MASTER_KEY_PREVIOUS: ` ${previous} , ${base.MASTER_KEY}` });
    expect(cfg.previousMasterKeys.map((k) => k.toString('base64'))).toEqual([previous]);
    expect(loadConfig(base).previousMasterKeys).toEqual([]);
  });

  it('requires a master key in production and all three external endpoints together', () => {
    expect(() => loadConfig({ APP_ENV: 'production', STACK_DIR: base.STACK_DIR })).toThrow(/MASTER_KEY is required/);
    expect(() => loadConfig({ ...base, APP_ENV: 'development', DATABASE_URL: 'postgres://x/y' })).toThrow(/all of DATABASE_URL/);
    const ext = loadConfig({ ...base, DATABASE_URL: 'postgres://x/y', KAFKA_BROKERS: 'a:1,b:2', KAFKA_CONNECT_URL: 'http://c:8083' });
    expect(ext.external).toBe(true);
    expect(ext.KAFKA_BROKERS).toEqual(['a:1', 'b:2']);
  });

  it('redacts secret-bearing keys when printed', () => {
    const cfg = loadConfig({ ...base, DATABASE_URL: 'postgres://u:pw@h/db', KAFKA_BROKERS: 'a:1', KAFKA_CONNECT_URL: 'http://c:8083', SMTP_URL: 'smtp://u:pw@h' });
    const printed = JSON.stringify(redactedConfig(cfg));
    expect(printed).not.toContain('pw');
    expect(printed).not.toContain(base.MASTER_KEY);
    const rotating = JSON.stringify(redactedConfig(loadConfig({ ...base, MASTER_KEY_PREVIOUS: Buffer.alloc(32, 9).toString('base64') })));
    expect(rotating).not.toContain(Buffer.alloc(32, 9).toString('base64'));
    expect(rotating).not.toContain('"data"'); // a Buffer printed as JSON
  });

  it('parses durations', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('2m')).toBe(120_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(() => parseDuration('soon')).toThrow();
  });
});
