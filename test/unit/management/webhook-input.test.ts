// The webhook input checks that a JSON schema cannot express, without I/O.
import { describe, expect, it } from 'vitest';
import { makeAllowList } from '../../../src/outbound/address.js';
import { checkHeaders, checkUpdateColumnsEvents, checkWebhookUrl, parseTableName } from '../../../src/management/webhook-input.js';

const none = makeAllowList([]);
const code = (fn: () => unknown) => {
  try {
    fn();
    return 'ok';
  } catch (e) {
    return (e as { code: string }).code;
  }
};

describe('checkWebhookUrl', () => {
  it('returns the normalised spelling that was checked, without a fragment', () => {
    expect(checkWebhookUrl('HTTPS://Example.COM:443/a/../b?x=1#frag', none)).toBe('https://example.com/b?x=1');
  });
  it('refuses private literals unless the allow-list admits them', () => {
    expect(code(() => checkWebhookUrl('http://127.0.0.1:8080/', none))).toBe('url_not_allowed');
    expect(checkWebhookUrl('http://127.0.0.1:8080/', makeAllowList(['127.0.0.0/8']))).toBe('http://127.0.0.1:8080/');
  });
  it('refuses credentials, other schemes and overlong URLs as invalid_url', () => {
    expect(code(() => checkWebhookUrl('https://a:b@example.com/', none))).toBe('invalid_url');
    expect(code(() => checkWebhookUrl('gopher://example.com/', none))).toBe('invalid_url');
    expect(code(() => checkWebhookUrl(`https://example.com/${'a'.repeat(2048)}`, none))).toBe('invalid_url');
  });
});

describe('parseTableName', () => {
  it('splits at the first dot and keeps the name as written', () => {
    expect(parseTableName('api.Order.Items')).toEqual({ schema: 'api', table: 'Order.Items' });
  });
  it.each(['orders', '.orders', 'public.', 'base.outbox', 'Public.orders', 'pg_catalog.pg_class'])('refuses %s', (t) => {
    expect(code(() => parseTableName(t))).toBe('validation_failed');
  });
  it('answers table_not_found for a name Postgres could never hold', () => {
    expect(code(() => parseTableName(`public.${'x'.repeat(64)}`))).toBe('table_not_found');
  });
});

describe('checkHeaders', () => {
  it('accepts placeholders and ordinary headers', () => {
    expect(checkHeaders({ Authorization: 'Bearer {{secret:API_TOKEN}}', 'X-A': 'b' })).toEqual({ Authorization: 'Bearer {{secret:API_TOKEN}}', 'X-A': 'b' });
  });
  it.each([
    [{ 'webhook-id': 'x' }, 'reserved_header'],
    [{ 'WeBhOoK-SiGnAtUrE': 'x' }, 'reserved_header'],
    [{ 'Transfer-Encoding': 'chunked' }, 'reserved_header'],
    [{ 'x a': 'b' }, 'validation_failed'],
    [{ 'x-a': 'b\nc' }, 'validation_failed'],
    [{ 'x-a': 'é' }, 'validation_failed'],
    [{ 'x-a': '{{secret:}}' }, 'validation_failed'],
    [{ 'x-a': '{{secret:9LIVES}}' }, 'validation_failed'],
    [{ 'x-a': 'a', 'X-a': 'b' }, 'validation_failed'],
    [Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`x-${i}`, 'v'])), 'validation_failed'],
  ])('refuses %j with %s', (h, c) => {
    expect(code(() => checkHeaders(h))).toBe(c);
  });
  it('never puts a header value into an error message', () => {
    expect(() => checkHeaders({ 'x-a': 'sensitive\u0000value' })).toThrow(/^(?!.*sensitive)/);
    expect(() => checkHeaders({ 'x-a': 'sensitive{{secret:bad-name}}' })).toThrow(/^(?!.*sensitive)/);
  });
});

describe('update_columns and events', () => {
  it('needs UPDATE among the events; null never does', () => {
    expect(code(() => checkUpdateColumnsEvents(['INSERT', 'UPDATE'], ['status']))).toBe('ok');
    expect(code(() => checkUpdateColumnsEvents(['INSERT', 'DELETE'], ['status']))).toBe('validation_failed');
    expect(code(() => checkUpdateColumnsEvents(['INSERT'], null))).toBe('ok');
  });
});
