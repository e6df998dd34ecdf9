import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../src/db/pool.js';
import { migrate, readMigrations, MigrationChangedError, MigrationMissingError } from '../../src/db/migrate.js';
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

  /** A database of its own, for a test that runs migrations of its own folder. */
  async function fresh(): Promise<{ pool: Pool; dir: string; done: () => Promise<void> }> {
    const db = uniqueName('mig_');
    const p = createPool(await createDatabase(db));
    return { pool: p, dir: mkdtempSync(path.join(tmpdir(), 'migrations-')), done: async () => { await p.end(); await dropDatabase(db); } };
  }

  it('refuses to start when an applied migration changed', async () => {
    const f = await fresh();
    try {
      writeFileSync(path.join(f.dir, '900_test.sql'), 'create table t900 (id int);');
      await migrate(f.pool, readMigrations(f.dir));
      writeFileSync(path.join(f.dir, '900_test.sql'), 'create table t900 (id bigint);');
      await expect(migrate(f.pool, readMigrations(f.dir))).rejects.toBeInstanceOf(MigrationChangedError);
    } finally {
      await f.done();
    }
  });

  it('refuses to start when an applied migration has no file (a newer build migrated the database, or a file was deleted)', async () => {
    const f = await fresh();
    try {
      writeFileSync(path.join(f.dir, '900_a.sql'), 'create table t900a (id int);');
      writeFileSync(path.join(f.dir, '901_b.sql'), 'create table t901b (id int);');
      expect(await migrate(f.pool, readMigrations(f.dir))).toBe(2);
      rmSync(path.join(f.dir, '901_b.sql'));
      const err = await migrate(f.pool, readMigrations(f.dir)).catch((e) => e);
      expect(err).toBeInstanceOf(MigrationMissingError);
      expect(err.message).toMatch(/901_b\.sql applied, which this build does not have/);
    } finally {
      await f.done();
    }
  });

  it('rolls back a failing migration as a whole', async () => {
    const f = await fresh();
    try {
      writeFileSync(path.join(f.dir, '950_bad.sql'), 'create table t950 (id int); select 1/0;');
      await expect(migrate(f.pool, readMigrations(f.dir))).rejects.toThrow(/950_bad.sql failed: division by zero/);
      const t = await f.pool.query("select to_regclass('t950') as t");
      expect(t.rows[0].t).toBeNull();
    } finally {
      await f.done();
    }
  });

  it("reports the migration's own error when its rollback fails too, and does not pool the broken connection", async () => {
    const f = await fresh();
    try {
      // the migration ends its own connection: its error is the termination, and the rollback then fails
      writeFileSync(path.join(f.dir, '960_kills_itself.sql'), 'create table t960 (id int); select pg_terminate_backend(pg_backend_pid());');
      const err = await migrate(f.pool, readMigrations(f.dir)).catch((e) => e);
      expect(err.message).toMatch(/960_kills_itself\.sql failed: terminating connection/);
      // the pool still works: the broken connection was closed, not handed out again
      expect((await f.pool.query('select 1 as one')).rows[0].one).toBe(1);
      expect((await f.pool.query("select to_regclass('t960') as t")).rows[0].t).toBeNull();
      expect((await f.pool.query("select count(*)::int as n from schema_migrations")).rows[0].n).toBe(0);
    } finally {
      await f.done();
    }
  });
});
