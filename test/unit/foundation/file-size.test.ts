// No source file over 500 lines (docs/architecture.md): a file that grows past it holds more than
// one thing, and the next feature should land beside it rather than in it.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const MAX_LINES = 500;

function sources(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return sources(rel);
    return /\.(ts|tsx|sql|css)$/.test(e.name) ? [rel] : [];
  });
}

// Generated files (*.gen.ts, e.g. web/src/api/types.gen.ts) are written by a script, not by hand:
// their length is the length of what they are generated from.
const generated = (f: string) => /\.gen\.ts$/.test(f);

it(`keeps every file of src/ and web/src/ at ${MAX_LINES} lines or fewer (generated ones aside)`, () => {
  const long = [...sources('src'), ...sources('web/src')]
    .filter((f) => !generated(f))
    .map((f) => ({ f, lines: readFileSync(path.join(root, f), 'utf8').split('\n').length - 1 }))
    .filter((x) => x.lines > MAX_LINES)
    .map((x) => `${x.f}: ${x.lines} lines`);
  expect(long).toEqual([]);
});
