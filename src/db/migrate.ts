// Forward-only migrations: numbered SQL files in migrations/, each applied in its own transaction
// under an advisory lock, with a SHA-256 checksum recorded per file. Re-running is harmless; an
// applied file whose content changed stops start-up, because editing shipped history silently
// forks every database that already ran the old text.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { repoRoot } from '../config.js';

const LOCK_KEY = 0x1_0b0c; // arbitrary, constant: one migrator at a time per database

export interface MigrationFile {
  id: number;
  name: string;
  sql: string;
  checksum: string;
}

export function readMigrations(dir = path.join(repoRoot, 'migrations')): MigrationFile[] {
  const files = readdirSync(dir).filter((f) => /^\d{3,}_[a-z0-9_]+\.sql$/.test(f));
  const list = files.map((name) => {
    const sql = readFileSync(path.join(dir, name), 'utf8');
    return { id: Number(name.split('_')[0]), name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
  });
  list.sort((a, b) => a.id - b.id);
  for (let i = 1; i < list.length; i++) {
    if (list[i].id === list[i - 1].id) throw new Error(`two migrations share number ${list[i].id}: ${list[i - 1].name}, ${list[i].name}`);
  }
  return list;
}

export class MigrationChangedError extends Error {}

export async function migrate(pool: pg.Pool, files = readMigrations(), log: (m: string) => void = () => {}): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [LOCK_KEY]);
    await client.query(`create table if not exists schema_migrations (
      id integer primary key, name text not null, checksum text not null, applied_at timestamptz not null default now())`);
    const applied = new Map<number, { name: string; checksum: string }>(
      (await client.query('select id, name, checksum from schema_migrations')).rows.map((r) => [r.id, r]),
    );
    for (const [id, row] of applied) {
      const file = files.find((f) => f.id === id);
      if (file && file.checksum !== row.checksum) {
        throw new MigrationChangedError(`migration ${row.name} was changed after it was applied (checksum differs); add a new migration instead of editing it`);
      }
    }
    let count = 0;
    for (const f of files) {
      if (applied.has(f.id)) continue;
      await client.query('begin');
      try {
        await client.query(f.sql);
        await client.query('insert into schema_migrations (id, name, checksum) values ($1, $2, $3)', [f.id, f.name, f.checksum]);
        await client.query('commit');
      } catch (e) {
        await client.query('rollback');
        throw new Error(`migration ${f.name} failed: ${(e as Error).message}`);
      }
      log(`applied migration ${f.name}`);
      count++;
    }
    return count;
  } finally {
    await client.query('select pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    client.release();
  }
}
