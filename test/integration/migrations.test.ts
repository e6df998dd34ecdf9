import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.js';
import { migrate, readMigrations, MigrationChangedError } from '../../src/db/migrate.js';
import { createDatabase, dropDatabase, uniqueName } from '../helpers/env.js';

describe('migration runner', () => {
  const name = uniqueName('mig_');
  let pool: Pool;
  const dir = mkdtempSync(path.join(tmpdir(), 'migrations-'));

  beforeAll(async () => {
    pool = createPool(await createDatabase(name));
  });
  afterAll(async () => {
    await pool?.end();
    await dropDatabase(name);
  });

  it('applies the real migrations once, and re-running is harmless', async () => {
    expect(await migrate(pool)).toBe(readMigrations().length);
    expect(await migrate(pool)).toBe(0);
    const plans = await pool.query('select name from plans order by name');
    expect(plans.rows.map((r) => r.name)).toEqual(['enterprise', 'free', 'pro']);
  });

  it('serialises concurrent migrators with the advisory lock', async () => {
    const other = uniqueName('mig_');
    const p = createPool(await createDatabase(other));
    try {
      const results = await Promise.all([migrate(p), migrate(p), migrate(p)]);
      expect(results.reduce((a, b) => a + b, 0)).toBe(readMigrations().length);
    } finally {
      await p.end();
      await dropDatabase(other);
    }
  });

  it('refuses to start when an applied migration changed', async () => {
    writeFileSync(path.join(dir, '900_test.sql'), 'create table t900 (id int);');
    await migrate(pool, readMigrations(dir));
    writeFileSync(path.join(dir, '900_test.sql'), 'create table t900 (id bigint);');
    await expect(migrate(pool, readMigrations(dir))).rejects.toBeInstanceOf(MigrationChangedError);
  });

  it('rolls back a failing migration as a whole', async () => {
    const d2 = mkdtempSync(path.join(tmpdir(), 'migrations-'));
    writeFileSync(path.join(d2, '950_bad.sql'), 'create table t950 (id int); select 1/0;');
    await expect(migrate(pool, readMigrations(d2))).rejects.toThrow(/950_bad.sql failed/);
    const t = await pool.query("select to_regclass('t950') as t");
    expect(t.rows[0].t).toBeNull();
  });
});
