// base.webhook_trigger in a real database: the message it writes (read back by a capture trigger on
// base.outbox, no Debezium needed), and the 1 MB rule measured on the row's JSON text — including
// rows whose binary size is far below their text size (escaped control characters), which the
// cheap size pre-check must still send to the exact check.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { installBaseSchema } from '../../src/outbox/enable.js';
import { installWebhookTrigger } from '../../src/outbox/webhook-triggers.js';
import { createDatabase, dropDatabase, uniqueName } from '../helpers/env.js';

describe('base.webhook_trigger', () => {
  const dbName = uniqueName('trg_');
  const hookId = '6f1c2a8e-1d2b-4c3d-9e4f-5a6b7c8d9e0f';
  let db: pg.Client;
  let url: string;

  beforeAll(async () => {
    url = await createDatabase(dbName);
    await installBaseSchema(url);
    db = new pg.Client({ connectionString: url });
    await db.connect();
    await db.query(`create table public.items (id serial primary key, name text, big text)`);
    await installWebhookTrigger(db, { id: hookId, schema: 'public', table: 'items', events: ['INSERT', 'UPDATE', 'DELETE'] });
    // what Debezium would read: every row inserted into base.outbox
    await db.query(`create table public.captured (n serial, id uuid, aggregateid text, type text, payload jsonb)`);
    await db.query(`create function public.capture() returns trigger language plpgsql as $$
      begin insert into public.captured (id, aggregateid, type, payload) values (new.id, new.aggregateid, new.type, new.payload); return null; end $$`);
    await db.query(`create trigger capture after insert on base.outbox for each row execute function public.capture()`);
  });

  afterAll(async () => {
    await db?.end();
    await dropDatabase(dbName).catch(() => {});
  });

  const last = async () => (await db.query(`select id, aggregateid, type, payload from public.captured order by n desc limit 1`)).rows[0];

  it('writes the message of an INSERT and an UPDATE, and leaves base.outbox empty', async () => {
    const { rows } = await db.query(`insert into public.items (name) values ('first') returning id`);
    const m = await last();
    expect(m.type).toBe('webhook');
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
