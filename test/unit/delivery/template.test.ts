// Body templates (src/delivery/channels/template.ts): placeholder paths, what a whole placeholder
// and one inside text become, and that a value put in is never read as a placeholder. The
// integration test (test/integration/webhook-payload-shaping.test.ts) covers the same on the real
// pipeline; these pin the edge cases of the small language.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors.js';
import { UnknownSecretError } from '../../../src/delivery/channels/placeholders.js';
import { checkTemplate, parsePlaceholder, renderTemplate, type TemplateScope } from '../../../src/delivery/channels/template.js';

const scope: TemplateScope = {
  type: 'UPDATE',
  schema: 'public',
  table: 'orders',
  occurred_at: '2026-01-01T00:00:00.000000Z',
  webhook_id: 'w1',
  message_id: 'm1',
  test: false,
  truncated: false,
  truncated_columns: [],
  payload: { type: 'UPDATE' },
  record: { id: 7, 'a b': 'spaced', tags: ['x', 'y'], meta: { n: 1, deep: { k: 'v' } }, note: '{{secret:TOKEN}} {{record.id}}', nothing: null },
  old_record: { id: 7 },
};

describe('body templates', () => {
  it('parses paths: .name, [index], ["any name"], with spaces inside the braces', () => {
    expect(parsePlaceholder('record.meta.deep.k')).toEqual({ root: 'record', path: ['meta', 'deep', 'k'] });
    expect(parsePlaceholder('record.tags[1]')).toEqual({ root: 'record', path: ['tags', 1] });
    expect(parsePlaceholder('record["a b"]')).toEqual({ root: 'record', path: ['a b'] });
    expect(parsePlaceholder('record["say \\"hi\\""]')).toEqual({ root: 'record', path: ['say "hi"'] });
    expect(parsePlaceholder('secret:TOKEN')).toBeNull();
    for (const bad of ['recordx', 'record.', 'record[x]', 'type.x', 'secret:1x', '__proto__', 'constructor', 'record..a']) {
      expect(() => parsePlaceholder(bad), bad).toThrow(ApiError);
    }
  });

  it('keeps a whole placeholder\'s type and writes one inside text as text', () => {
    const out = renderTemplate(
      { id: '{{record.id}}', meta: '{{ record.meta }}', tag: '{{record.tags[1]}}', spaced: '{{record["a b"]}}', none: '{{record.nothing}}', absent: '{{record.nope.deeper}}', text: 'id={{record.id}} meta={{record.meta}} none=[{{record.nothing}}]', keep: { '{{type}}': '{{type}}' }, list: ['{{old_record.id}}', 1, true, null] },
      scope,
    );
    expect(out).toEqual({ id: 7, meta: { n: 1, deep: { k: 'v' } }, tag: 'y', spaced: 'spaced', none: null, absent: null, text: 'id=7 meta={"n":1,"deep":{"k":"v"}} none=[]', keep: { '{{type}}': 'UPDATE' }, list: [7, 1, true, null] });
  });

  it('never reads a value it put in as a placeholder, and takes secrets only from the template', () => {
    const out = renderTemplate({ note: '{{record.note}}', inline: 'n: {{record.note}}', token: 'Bearer {{secret:TOKEN}}' }, scope, new Map([['TOKEN', 's3cret']]));
    expect(out).toEqual({ note: '{{secret:TOKEN}} {{record.id}}', inline: 'n: {{secret:TOKEN}} {{record.id}}', token: 'Bearer s3cret' });
    expect(() => renderTemplate({ t: '{{secret:MISSING}}' }, scope)).toThrow(UnknownSecretError);
  });

  it('does not walk into an object\'s prototype', () => {
    expect(renderTemplate({ a: '{{record.meta.constructor}}', b: '{{record.tags.length}}' }, scope)).toEqual({ a: null, b: null });
  });

  it('checks size, placeholders and columns at save', () => {
    expect(() => checkTemplate({ a: '{{record.id}}' }, ['id'], 't')).not.toThrow();
    expect(() => checkTemplate({ a: '{{record.other}}' }, ['id'], 't')).toThrow(/"other" is not a column of t/);
    expect(() => checkTemplate({ a: '{{record[0]}}' }, ['id'], 't')).toThrow(ApiError);
    expect(() => checkTemplate({ a: 'x'.repeat(40_000) }, ['id'], 't')).toThrow(/over the 32768-byte limit/);
    expect(() => checkTemplate({ a: Array.from({ length: 501 }, () => '{{type}}').join('') }, [], 't')).toThrow(/501 placeholders/);
  });
});
