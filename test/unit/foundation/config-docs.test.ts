import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// Every key the configuration schema reads must be documented in .env.example and in the tables of
// docs/configuration.md, which the README's Configuration section links.
const keys = [...readFileSync('src/config.ts', 'utf8').matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]);
const CONFIG_DOC = 'docs/configuration.md';

describe('configuration docs', () => {
  it('finds the keys', () => expect(keys.length).toBeGreaterThan(30));

  it('lists every key in .env.example', () => {
    const env = readFileSync('.env.example', 'utf8');
    expect(keys.filter((k) => !new RegExp(`^#? ?${k}=`, 'm').test(env))).toEqual([]);
  });

  it('lists every key in a table row of docs/configuration.md', () => {
    const rows = readFileSync(CONFIG_DOC, 'utf8').split('\n').filter((l) => l.startsWith('| `'));
    expect(keys.filter((k) => !rows.some((r) => r.split('|')[1].includes(`\`${k}\``)))).toEqual([]);
  });

  it('is linked from the README', () => {
    expect(readFileSync('README.md', 'utf8')).toContain(`](${CONFIG_DOC})`);
  });
});
