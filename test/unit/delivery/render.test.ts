import { describe, expect, it } from 'vitest';
import { placeholderNames, scrub, substitute, substituteJson, UnknownSecretError } from '../../../src/delivery/channels/placeholders.js';

const secrets = new Map([['TOKEN', 'abc"def/ghi'], ['X', 'v']]);

describe('secret placeholders', () => {
  it('finds names in strings, keys and nested values', () => {
    expect(placeholderNames('https://h/{{secret:A}}', { k: '{{secret:B}} {{secret:A}}', '{{secret:C}}': 1 }, [['{{secret:D}}']], null).sort()).toEqual(['A', 'B', 'C', 'D']);
    expect(placeholderNames('{{secret:1bad}} {{ secret:A }} {{secret:}}')).toEqual([]);
  });
  it('substitutes in text and inside JSON strings (so escaping stays valid)', () => {
    expect(substitute('Bearer {{secret:TOKEN}}', secrets)).toBe('Bearer abc"def/ghi');
    const body = substituteJson({ a: '{{secret:TOKEN}}', n: 1, list: ['x{{secret:X}}'], nil: null }, secrets);
    expect(JSON.parse(JSON.stringify(body))).toEqual({ a: 'abc"def/ghi', n: 1, list: ['xv'], nil: null });
  });
  it('refuses an unknown secret', () => {
    expect(() => substitute('{{secret:NOPE}}', secrets)).toThrow(UnknownSecretError);
  });
  it('scrubs raw, JSON-escaped and URL-encoded values, leaving tiny values alone', () => {
    const text = `raw abc"def/ghi json ${JSON.stringify('abc"def/ghi')} url ${encodeURIComponent('abc"def/ghi')} tiny v`;
    expect(scrub(text, secrets)).toBe('raw {{secret:TOKEN}} json "{{secret:TOKEN}}" url {{secret:TOKEN}} tiny v');
  });
});
