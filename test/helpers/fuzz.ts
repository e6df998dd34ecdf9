// Building blocks shared by the property-based fuzz tests (management-fuzz, sso-auth-fuzz): the
// request shape, "a value of the wrong JSON type", odd strings and the characters Postgres or HTTP
// cannot take inside a text field.
import fc from 'fast-check';

export interface Req {
  kind: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

// Types JSON can carry, for "a field of the wrong type": anything whose JSON type differs.
const jsonType = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v);
export const wrongFor = (original: unknown) =>
  fc.jsonValue({ maxDepth: 2 }).filter((v) => jsonType(v) !== jsonType(original) && !(jsonType(original) === 'integer' && typeof v === 'number'));

/** Short strings of every kind, plus the given known-awkward values. */
export const oddString = (awkward: string[]) =>
  fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 20 }), fc.constantFrom(...awkward));

// A control character or an unpaired surrogate inside a text field (Postgres text cannot hold NUL,
// jsonb refuses lone surrogates, CR/LF would inject headers).
export const badChar = fc.constantFrom('\u0000', '\ud800', '\udfff', '\r\n', '\u001b', '\u007f', '\n');

/** `bad` inserted into `v` at position `at` (mod its length + 1). */
export const insertAt = (v: string, bad: string, at: number) => {
  const i = at % (v.length + 1);
  return v.slice(0, i) + bad + v.slice(i);
};
