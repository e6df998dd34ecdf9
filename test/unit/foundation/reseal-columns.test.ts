// The reseal command (src/admin/reseal.ts) must know every sealed column, or a key rotation would
// leave values only the old key can open. Sealed columns are the *_enc columns of the migrations.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../../src/config.js';
import { SEALED_COLUMNS } from '../../../src/admin/reseal.js';

describe('reseal', () => {
  it('covers every *_enc column of the migrations', () => {
    const dir = path.join(repoRoot, 'migrations');
    const found = new Set<string>();
    for (const f of readdirSync(dir).filter((f) => f.endsWith('.sql'))) {
      let table = '';
      for (const line of readFileSync(path.join(dir, f), 'utf8').split('\n')) {
        const t = /^\s*(?:create table|alter table)\s+(?:if not exists\s+)?([a-z_]+)/i.exec(line);
        if (t) table = t[1];
        // a column line of a create table, or "add column x_enc bytea" anywhere on an alter table line
        for (const c of line.matchAll(/(?:^\s*|add column\s+(?:if not exists\s+)?)([a-z_]+_enc)\s+bytea/gi)) found.add(`${table}.${c[1]}`);
      }
    }
    expect(found.size).toBeGreaterThanOrEqual(7);
    expect(SEALED_COLUMNS.map((c) => c.name).sort()).toEqual([...found].sort());
  });
});
