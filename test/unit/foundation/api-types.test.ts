// The dashboard's types of the API's answers are generated from the route schemas
// (scripts/openapi-types.ts → web/src/api/types.gen.ts). A route whose response schema changed
// without regenerating them turns this red, and so does a dashboard that no longer compiles
// against them. Also here: the rule that keeps listing fields as `required` (which the types read)
// from changing an answer.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../../src/config.js';
import { GENERATED_FILE, openApiDocument, schemaType, typesSource } from '../../../scripts/openapi-types.js';

it('web/src/api/types.gen.ts is what the route schemas generate now', async () => {
  const committed = existsSync(GENERATED_FILE) ? readFileSync(GENERATED_FILE, 'utf8') : '';
  const fresh = typesSource(await openApiDocument());
  if (committed === fresh) return;
  const have = committed.split('\n');
  const want = fresh.split('\n');
  const line = want.findIndex((l, i) => l !== have[i]);
  expect.fail(
    `web/src/api/types.gen.ts is out of date with the route schemas: run npm run gen:api-types, then npx tsc --noEmit -p web/tsconfig.json.\n` +
      `First difference, line ${line + 1}:\n  generated: ${want[line] ?? '(end of file)'}\n  committed: ${have[line] ?? '(end of file)'}`,
  );
}, 60_000);

it('the dashboard compiles against them (tsc -p web)', async () => {
  const tsc = path.join(repoRoot, 'node_modules', '.bin', 'tsc');
  await promisify(execFile)(tsc, ['--noEmit', '-p', 'web/tsconfig.json'], { cwd: repoRoot, maxBuffer: 16 * 1024 * 1024 }).catch((err: { stdout?: string; message?: string }) => {
    expect.fail(`the dashboard does not compile:\n${err.stdout || err.message}`);
  });
}, 60_000);

// fast-json-stringify writes an object's required fields first, then the others, each in the order
// the schema declares them; listing a field as required after an optional one that is present
// would move that one behind it.
it('no response schema lists a field as required after an optional one (the answer would change order)', async () => {
  const api = await openApiDocument();
  const found: string[] = [];
  const walk = (s: unknown, where: string): void => {
    if (!s || typeof s !== 'object') return;
    const o = s as { properties?: Record<string, unknown>; required?: string[]; items?: unknown; additionalProperties?: unknown; oneOf?: unknown[]; anyOf?: unknown[]; allOf?: unknown[] };
    if (o.properties && o.required) {
      let optional: string | undefined;
      for (const k of Object.keys(o.properties)) {
        if (!o.required.includes(k)) optional ??= k;
        else if (optional) found.push(`${where}: ${k} is required after the optional ${optional}`);
      }
    }
    for (const [k, v] of Object.entries(o.properties ?? {})) walk(v, `${where}.${k}`);
    walk(o.items, `${where}[]`);
    walk(o.additionalProperties, `${where}{}`);
    for (const c of ['oneOf', 'anyOf', 'allOf'] as const) o[c]?.forEach((x, i) => walk(x, `${where}/${c}/${i}`));
  };
  for (const [p, ops] of Object.entries(api.paths)) {
    for (const [m, op] of Object.entries(ops)) {
      for (const [code, r] of Object.entries(op.responses ?? {})) walk(r.content?.['application/json']?.schema, `${m.toUpperCase()} ${p} ${code}`);
    }
  }
  expect(found).toEqual([]);
}, 60_000);

describe('schemaType: JSON Schema to TypeScript', () => {
  it('makes a property optional unless `required` lists it, and keeps null where the type allows it', () => {
    const t = schemaType({ type: 'object', required: ['id'], properties: { id: { type: 'string' }, at: { type: ['string', 'null'], format: 'date-time' } } });
    expect(t).toBe('{\n  id: string;\n  at?: string | null;\n}');
  });

  it('turns enums into literal unions, maps into records, and brackets a union before []', () => {
    expect(schemaType({ type: 'string', enum: ['open', "it's"] })).toBe(`'open' | 'it\\'s'`);
    expect(schemaType({ type: 'object', additionalProperties: { type: 'string' } })).toBe('Record<string, string>');
    expect(schemaType({ type: 'object', additionalProperties: true })).toBe('Record<string, unknown>');
    expect(schemaType({ type: 'array', items: { type: ['integer', 'null'] } })).toBe('(number | null)[]');
    expect(schemaType({ type: ['array', 'null'], items: { type: 'string' } })).toBe('string[] | null');
    expect(schemaType({})).toBe('unknown');
  });

  it('carries descriptions over as comments', () => {
    expect(schemaType({ type: 'object', properties: { n: { type: 'integer', description: 'how many' } } })).toBe('{\n  /** how many */\n  n?: number;\n}');
  });

  it('refuses a keyword it does not understand rather than guess', () => {
    expect(() => schemaType({ type: 'object', properties: { a: { $ref: '#/components/schemas/A' } } })).toThrow(/#\/properties\/a uses "\$ref"/);
  });
});
