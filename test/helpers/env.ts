// Per-file isolation on the shared stack: every test file gets its own control database, its own
// topic prefix (hence its own topics and consumer groups) and its own project databases.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Admin } from 'kafkajs';
import { inject } from 'vitest';

export const stack = () => inject('stack');

export function uniqueName(prefix: string): string {
  return `${prefix}${randomBytes(5).toString('hex')}`;
}

export function dbUrl(name: string): string {
  const u = new URL(stack().adminDatabaseUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function createDatabase(name: string): Promise<string> {
  const c = new pg.Client({ connectionString: stack().adminDatabaseUrl });
  await c.connect();
  try {
    await c.query(`create database ${pg.escapeIdentifier(name)}`);
  } finally {
    await c.end();
  }
  return dbUrl(name);
}

export async function dropDatabase(name: string): Promise<void> {
  const c = new pg.Client({ connectionString: stack().adminDatabaseUrl });
  await c.connect();
  try {
    await c.query(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
  } finally {
    await c.end();
  }
}

/** One statement on a connection of its own (opened and closed around it). */
export async function sql(url: string, text: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text, params);
  } finally {
    await c.end();
  }
}

/** Waits until fn returns a truthy value, or fails with what it last saw. */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 30_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v as T;
      last = v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}; last: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
}

/**
 * Creates a topic and waits until every partition has a leader. kafkajs's own waitForLeaders gives
 * up on UNKNOWN_TOPIC_OR_PARTITION, which a broker busy with other test files' topic deletions can
 * answer for a moment.
 */
export async function createTopicReady(admin: Admin, topic: string, numPartitions: number): Promise<void> {
  await admin.createTopics({ topics: [{ topic, numPartitions }], waitForLeaders: false });
  await eventually(
    async () => {
      const md = await admin.fetchTopicMetadata({ topics: [topic] }).catch(() => null);
      return md?.topics[0]?.partitions.length === numPartitions && md.topics[0].partitions.every((p) => p.leader >= 0);
    },
    30_000,
    `the topic ${topic} to have its partition leaders`,
  );
}

/** A fetch response's status, body (JSON when it parses, else its text; null when empty) and headers. */
export async function readResponse(res: Response): Promise<{ status: number; body: any; headers: Headers }> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {}
  return { status: res.status, body, headers: res.headers };
}
