import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// Every key the configuration schema reads must be documented in .env.example and the README.
const keys = [...readFileSync('src/config.ts', 'utf8').matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]);

describe('configuration docs', () => {
  it('finds the keys', () => expect(keys.length).toBeGreaterThan(30));

  it('lists every key in .env.example', () => {
    const env = readFileSync('.env.example', 'utf8');
    expect(keys.filter((k) => !new RegExp(`^#? ?${k}=`, 'm').test(env))).toEqual([]);
  });

  it('lists every key in the README configuration table', () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(keys.filter((k) => !readme.includes(`\`${k}\``))).toEqual([]);
  });
});
