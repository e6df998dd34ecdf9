// base.webhook_trigger in a real database: the message it writes (a transactional logical decoding
// message, read back through a test_decoding slot of the test's own, no Debezium needed), and the
// 1 MB rule measured on the row's JSON text — including rows whose binary size is far below their
// text size (escaped control characters), which the cheap size pre-check must still send to the
// exact check.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { installBaseSchema } from '../../src/outbox/enable.js';
import { installWebhookTrigger } from '../../src/outbox/webhook-triggers.js';
import { createDatabase, dropDatabase, uniqueName } from '../helpers/env.js';

describe('base.webhook_trigger', () => {
  const dbName = uniqueName('trg_');
  const slot = `${dbName}_read`.toLowerCase();
  const hookId = '6f1c2a8e-1d2b-4c3d-9e4f-5a6b7c8d9e0f';
  let db: pg.Client;
  let url: string;
  let prefix: string;

  beforeAll(async () => {
    url = await createDatabase(dbName);
    await installBaseSchema(url);
    db = new pg.Client({ connectionString: url });
    await db.connect();
    await db.query(`create table public.items (id serial primary key, name text, big text)`);
    await installWebhookTrigger(db, { id: hookId, schema: 'public', table: 'items', events: ['INSERT', 'UPDATE', 'DELETE'] });
    // what the service sets once the connector reads messages (src/outbox/messages.ts)
    prefix = `base_outbox_${randomBytes(16).toString('hex')}`;
    await db.query('update base.capture set message_prefix = $1', [prefix]);
    // what Debezium would read: the database's logical decoding messages, in commit order
    await db.query(`select pg_create_logical_replication_slot($1, 'test_decoding')`, [slot]);
  });

  afterAll(async () => {
    await db?.query('select pg_drop_replication_slot($1)', [slot]).catch(() => {});
    await db?.end();
    await dropDatabase(dbName).catch(() => {});
  });

  /** The messages committed since the last call: prefix, whether transactional, and content. */
  const messages = async () => {
    const r = await db.query(`select data from pg_logical_slot_get_changes($1, null, null) where data like 'message:%'`, [slot]);
    return r.rows.map(({ data }: { data: string }) => {
      const m = /^message: transactional: (\d) prefix: ([^,]*), sz: \d+ content:/.exec(data)!;
      return { transactional: m[1] === '1', prefix: m[2], content: data.slice(m[0].length) };
    });
  };
  /** The last message written, in the shape of a base.outbox row (what the connector turns it into). */
  const last = async () => {
    const all = await messages();
    expect(all.length).toBeGreaterThan(0);
    const m = all[all.length - 1];
    expect(m).toMatchObject({ transactional: true, prefix });
    const row = JSON.parse(m.content);
    expect(typeof row.payload).toBe('string'); // JSON text, as the Event Router passes it on
    return { ...row, payload: JSON.parse(row.payload) };
  };

  it("writes the message of an INSERT and an UPDATE, under the project's prefix, and nothing into base.outbox", async () => {
    const { rows } = await db.query(`insert into public.items (name) values ('first') returning id`);
    const m = await last();
    expect(m.type).toBe('webhook');
    expect(m.aggregatetype).toBe('message');
    expect(m.aggregateid).toBe(m.id);
    expect(m.payload).toMatchObject({ id: m.id, kind: 'webhook', webhook_id: hookId });
    expect(m.payload.payload).toEqual({
      type: 'INSERT',
      schema: 'public',
      table: 'items',
      record: { id: rows[0].id, name: 'first', big: null },
      old_record: null,
      webhook_id: hookId,
      occurred_at: m.payload.created_at,
    });
    expect(m.payload.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    await db.query(`update public.items set name = 'renamed' where id = $1`, [rows[0].id]);
    const u = (await last()).payload.payload;
    expect(u).toMatchObject({ type: 'UPDATE', record: { name: 'renamed' }, old_record: { name: 'first' } });
    expect(u).not.toHaveProperty('truncated');
    expect((await db.query('select count(*)::int as n from base.outbox')).rows[0].n).toBe(0);
  });

  it('writes nothing for a rolled-back change', async () => {
    await messages();
    await db.query('begin');
    await db.query(`insert into public.items (name) values ('rolled back')`);
    await db.query('rollback');
    await db.query(`insert into public.items (name) values ('committed')`);
    const after = await messages();
    expect(after).toHaveLength(1);
    expect(JSON.parse(JSON.parse(after[0].content).payload).payload.record.name).toBe('committed');
  });

  it('writes a row of base.outbox instead while the project has no prefix yet', async () => {
    await messages();
    await db.query('update base.capture set message_prefix = null');
    try {
      await db.query(`insert into public.items (name) values ('before the prefix')`);
      const r = await db.query(`select data from pg_logical_slot_get_changes($1, null, null)`, [slot]);
      const lines = r.rows.map((x: { data: string }) => x.data);
      expect(lines.filter((l) => l.startsWith('message:'))).toEqual([]);
      expect(lines.some((l) => l.startsWith('table base.outbox: INSERT:') && l.includes('before the prefix'))).toBe(true);
      expect((await db.query('select count(*)::int as n from base.outbox')).rows[0].n).toBe(0);
    } finally {
      await db.query('update base.capture set message_prefix = $1', [prefix]);
    }
  });

  it('keeps the prefix from the API roles and from function bodies, and across a re-install', async () => {
    // any role may call pg_logical_emit_message: the random prefix is what a forgery cannot know
    for (const role of ['anon', 'authenticated', 'base_callback']) {
      await db.query('begin');
      try {
        await db.query(`set local role ${role}`);
        await expect(db.query('select message_prefix from base.capture')).rejects.toThrow(/permission denied/);
      } finally {
        await db.query('rollback');
      }
    }
    const inBodies = await db.query(`select count(*)::int as n from pg_proc where prosrc like '%' || $1 || '%'`, [prefix]);
    expect(inBodies.rows[0].n).toBe(0);
    await db.query(`comment on schema base is 'integrations base schema 0000000000000000'`);
    await installBaseSchema(url);
    expect((await db.query('select message_prefix from base.capture')).rows[0].message_prefix).toBe(prefix);
  });

  it('keeps a row just under 1 MB of JSON whole', async () => {
    await db.query(`insert into public.items (name, big) values ('under', repeat('x', 1000000))`);
    const p = (await last()).payload.payload;
    expect(p).not.toHaveProperty('truncated');
    expect(p.record.big).toHaveLength(1_000_000);
  });

  it('truncates a row over 1 MB, compressible or not, and one over 1 MB only once escaped', async () => {
    for (const big of [`repeat('x', 1100000)`, `(select string_agg(md5(g::text), '') from generate_series(1, 40000) g)`, `repeat(chr(1), 200000)`]) {
      await db.query(`insert into public.items (name, big) values ('huge', ${big})`);
      const p = (await last()).payload.payload;
      expect(p).toMatchObject({ type: 'INSERT', truncated: true, truncated_columns: ['big'], record: { name: 'huge' } });
      expect(p.record).not.toHaveProperty('big');
    }
  });

  it('truncates old_record and record of an UPDATE from over 1 MB, naming each column once', async () => {
    const { rows } = await db.query(`insert into public.items (name, big) values ('a', repeat('y', 1100000)) returning id`);
    await db.query(`update public.items set name = 'b' where id = $1`, [rows[0].id]);
    const p = (await last()).payload.payload;
    expect(p).toMatchObject({ type: 'UPDATE', truncated: true, truncated_columns: ['big'], record: { name: 'b' }, old_record: { name: 'a' } });
    expect(p.old_record).not.toHaveProperty('big');
  });

  it('a re-install gives up rather than queue behind a transaction that has enqueued', async () => {
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await other.query('begin');
      await other.query(`insert into public.items (name) values ('open transaction')`);
      const err = await installBaseSchema(url).then(() => null, (e: { code?: string }) => e);
      expect(err?.code).toBe('55P03'); // lock_not_available
      await other.query('rollback');
      await installBaseSchema(url);
    } finally {
      await other.end();
    }
  });
});
