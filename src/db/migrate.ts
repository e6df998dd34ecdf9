// Forward-only migrations: numbered SQL files in migrations/, each applied in its own transaction
// under an advisory lock, with a SHA-256 checksum recorded per file. Re-running is harmless; an
// applied file whose content changed stops start-up, because editing shipped history silently
// forks every database that already ran the old text; so does an applied migration whose file is
// gone (an older build started on a newer database, or a file deleted from history): that build
// does not know the schema it would run on.
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
export class MigrationMissingError extends Error {}

export async function migrate(pool: pg.Pool, files = readMigrations(), log: (m: string) => void = () => {}): Promise<number> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('select pg_advisory_lock($1)', [LOCK_KEY]);
    await client.query(`create table if not exists schema_migrations (
      id integer primary key, name text not null, checksum text not null, applied_at timestamptz not null default now())`);
    const applied = new Map<number, { name: string; checksum: string }>(
      (await client.query('select id, name, checksum from schema_migrations')).rows.map((r) => [r.id, r]),
    );
    const missing: string[] = [];
    for (const [id, row] of applied) {
      const file = files.find((f) => f.id === id);
      if (!file) missing.push(row.name);
      else if (file.checksum !== row.checksum) {
        throw new MigrationChangedError(`migration ${row.name} was changed after it was applied (checksum differs); add a new migration instead of editing it`);
      }
    }
    if (missing.length > 0) {
      throw new MigrationMissingError(
        `the database has migration${missing.length > 1 ? 's' : ''} ${missing.join(', ')} applied, which this build does not have: it was migrated by a newer build (run that one), or a migration file was deleted (restore it; migrations are forward-only)`,
      );
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
        // the migration's own error is the one to report, even when the rollback fails too (a
        // connection the migration broke); that connection is then closed, not pooled
        await client.query('rollback').catch((err: Error) => (broken = err));
        throw new Error(`migration ${f.name} failed: ${(e as Error).message}`, { cause: e });
      }
      log(`applied migration ${f.name}`);
      count++;
    }
    return count;
  } finally {
    if (!broken) await client.query('select pg_advisory_unlock($1)', [LOCK_KEY]).catch((err: Error) => (broken = err));
    client.release(broken);
  }
}
