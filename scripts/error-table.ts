// Regenerates the error table of docs/errors.md from src/errors.ts (npm run docs:errors).
import { readFileSync, writeFileSync } from 'node:fs';
import { catalogue } from '../src/errors.js';

/** Where the generated table lives (the README links it). */
export const ERROR_DOC = 'docs/errors.md';

export function errorTable(): string {
  const rows = Object.entries(catalogue).map(([code, [status, message]]) => `| \`${code}\` | ${status} | ${message.replace(/\|/g, '\\|')} |`);
  return ['| code | status | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** The table between the `errors:start` and `errors:end` markers of a document, or null. */
export function docTable(doc: string): string | null {
  const m = /<!-- errors:start -->\n([\s\S]*?)\n?<!-- errors:end -->/.exec(doc);
  return m ? m[1].trim() : null;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const doc = readFileSync(ERROR_DOC, 'utf8');
  writeFileSync(ERROR_DOC, doc.replace(/<!-- errors:start -->[\s\S]*?<!-- errors:end -->/, `<!-- errors:start -->\n${errorTable()}\n<!-- errors:end -->`));
  console.log(`${ERROR_DOC} error table updated`);
}
