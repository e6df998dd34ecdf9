// Regenerates the README's error table from src/errors.ts (npm run docs:errors).
import { readFileSync, writeFileSync } from 'node:fs';
import { catalogue } from '../src/errors.js';

export function errorTable(): string {
  const rows = Object.entries(catalogue).map(([code, [status, message]]) => `| \`${code}\` | ${status} | ${message.replace(/\|/g, '\\|')} |`);
  return ['| code | status | meaning |', '|---|---|---|', ...rows].join('\n');
}

export function readmeTable(readme: string): string | null {
  const m = /<!-- errors:start -->\n([\s\S]*?)\n?<!-- errors:end -->/.exec(readme);
  return m ? m[1].trim() : null;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const readme = readFileSync('README.md', 'utf8');
  writeFileSync('README.md', readme.replace(/<!-- errors:start -->[\s\S]*?<!-- errors:end -->/, `<!-- errors:start -->\n${errorTable()}\n<!-- errors:end -->`));
  console.log('README error table updated');
}
