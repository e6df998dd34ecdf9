// Column filters for UPDATE webhooks (update_columns): the API's validation and record, the
// triggers it installs, and, end to end, that an UPDATE leaving the listed columns unchanged
// enqueues nothing (no message is written) while one changing a listed column is delivered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver } from '../helpers/receiver.js';

describe('webhook column filters (update_columns)', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    base = { table: 'public.orders', events: ['INSERT', 'UPDATE'], url: `${receiver.url}/orders` };
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32' } });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('free');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query(`create table public.orders (id serial primary key, status text, total int, note text, meta json, "Mixed" int);
                    create table public.other (id serial primary key, name text)`);
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  const api = (method: string, path: string, body?: unknown) => svc.api(project.ownerToken, method, `/v1/projects/${project.ref}${path}`, body);
  let base: { table: string; events: string[]; url: string };
  const triggers = async (id: string) =>
    (await db.query(`select tgname, pg_get_triggerdef(oid) as def from pg_trigger where tgname like $1 order by tgname`, [`webhook_${id.replace(/-/g, '')}%`])).rows as { tgname: string; def: string }[];

  it('validates: columns must exist (case-sensitive), UPDATE must be an event, the list is non-empty', async () => {
    let r = await api('POST', '/webhooks', { ...base, update_columns: ['status', 'nope'] });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 'column_not_found', message: expect.stringContaining('"nope"') });
    expect((await api('POST', '/webhooks', { ...base, update_columns: ['mixed'] })).body.code).toBe('column_not_found');
    r = await api('POST', '/webhooks', { ...base, events: ['INSERT'], update_columns: ['status'] });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 'validation_failed', message: expect.stringContaining('UPDATE') });
    for (const update_columns of [[], ['status', 'status'], 'status', [''], [7]]) {
      expect((await api('POST', '/webhooks', { ...base, update_columns })).body.code).toBe('validation_failed');
    }
    expect((await api('GET', '/webhooks')).body).toEqual([]);
    // refused before anything is set up in the project database
    expect((await api('GET', '')).body.outbox_enabled).toBe(false);
  });

  it('is null by default, shown by GET, editable by PATCH, and re-validated against the final state', async () => {
    const plain = await api('POST', '/webhooks', { ...base, url: `${receiver.url}/plain` });
    expect(plain.status).toBe(201);
    expect(plain.body.update_columns).toBeNull();
    expect((await triggers(plain.body.id)).map((t) => t.tgname)).toEqual([`webhook_${plain.body.id.replace(/-/g, '')}`]);

    let r = await api('PATCH', `/webhooks/${plain.body.id}`, { update_columns: ['Mixed', 'meta'] });
    expect(r.status).toBe(200);
    expect(r.body.update_columns).toEqual(['Mixed', 'meta']);
    expect((await api('GET', `/webhooks/${plain.body.id}`)).body.update_columns).toEqual(['Mixed', 'meta']);
    const [ins, upd] = await triggers(plain.body.id);
    expect(ins.def).toMatch(/AFTER INSERT ON public\.orders FOR EACH ROW/);
    expect(upd.tgname).toBe(`webhook_${plain.body.id.replace(/-/g, '')}_update`);
    // an int compares directly; json has no equality operator, so it is compared as jsonb
    expect(upd.def).toMatch(/AFTER UPDATE ON public\.orders FOR EACH ROW WHEN \(\(\(old\."Mixed" IS DISTINCT FROM new\."Mixed"\) OR \(to_jsonb\(old\.meta\) IS DISTINCT FROM to_jsonb\(new\.meta\)\)\)\)/);

    // the state after the PATCH is what is checked
    r = await api('PATCH', `/webhooks/${plain.body.id}`, { events: ['INSERT'] });
    expect(r.body.code).toBe('validation_failed');
    r = await api('PATCH', `/webhooks/${plain.body.id}`, { table: 'public.other' });
    expect(r.body).toMatchObject({ code: 'column_not_found', message: expect.stringContaining('public.other') });
    r = await api('PATCH', `/webhooks/${plain.body.id}`, { table: 'public.other', update_columns: ['name'] });
    expect(r.status).toBe(200);
    r = await api('PATCH', `/webhooks/${plain.body.id}`, { events: ['INSERT'], update_columns: null });
    expect(r.body).toMatchObject({ events: ['INSERT'], update_columns: null });
    expect((await triggers(plain.body.id)).map((t) => t.def)).toEqual([expect.stringMatching(/AFTER INSERT ON public\.other/)]);
    const audit = (await api('GET', '/audit?limit=5')).body;
    expect(audit[0]).toMatchObject({ action: 'webhook.update', details: { fields: ['events', 'update_columns'] } });
    expect((await api('DELETE', `/webhooks/${plain.body.id}`)).status).toBe(204);
    expect(await triggers(plain.body.id)).toEqual([]);
  });

  it('an UPDATE of unlisted columns enqueues nothing; a change of a listed column is delivered', async () => {
    const created = await api('POST', '/webhooks', { ...base, update_columns: ['status', 'total'] });
    const hook = created.body;
    if (created.status !== 201) throw new Error(JSON.stringify(created.body));
    expect(hook.update_columns).toEqual(['status', 'total']);
    // every message the project enqueues, as Debezium would read it: the trigger's logical
    // decoding messages, through a test_decoding slot of the test's own (dropped at the end)
    const slot = `uc_${hook.id.replace(/-/g, '')}`;
    await db.query(`select pg_create_logical_replication_slot($1, 'test_decoding')`, [slot]);
    const seen: any[] = [];
    const enqueued = async () => {
      const r = await db.query(`select data from pg_logical_slot_get_changes($1, null, null) where data like 'message: transactional: 1 prefix: base_outbox_%'`, [slot]);
      for (const { data } of r.rows) seen.push(JSON.parse(JSON.parse(data.slice(data.indexOf(' content:') + ' content:'.length)).payload).payload);
      return seen;
    };
    try {

    const { rows } = await db.query(`insert into public.orders (status, total, note) values ('new', 10, 'a') returning id`);
    const id = rows[0].id;
    await db.query(`update public.orders set note = 'b' where id = $1`, [id]); // unlisted column
    await db.query(`update public.orders set status = status, total = 10 where id = $1`, [id]); // listed, value unchanged
    expect((await enqueued()).map((p) => p.type)).toEqual(['INSERT']);

    // a BEFORE trigger changing a listed column counts, though the UPDATE does not name it
    await db.query(`create function public.bump() returns trigger language plpgsql as $$
        begin if new.note = 'bump' then new.total := old.total + 1; end if; return new; end $$;
      create trigger bump before update on public.orders for each row execute function public.bump()`);
    await db.query(`update public.orders set note = 'bump' where id = $1`, [id]);
    await db.query(`update public.orders set status = 'paid' where id = $1`, [id]);
    const sent = await enqueued();
    expect(sent.map((p) => p.type)).toEqual(['INSERT', 'UPDATE', 'UPDATE']);
    expect(sent[1]).toMatchObject({ record: { total: 11, note: 'bump' }, old_record: { total: 10, note: 'b' } });
    expect(sent[2]).toMatchObject({ record: { status: 'paid' }, old_record: { status: 'new' } });

    // at the receiver: the three enqueued messages, and the paid update as the last proof the
    // pipeline flows; nothing for the filtered-out updates
    const got = await eventually(async () => (receiver.to('/orders').length >= 3 ? receiver.to('/orders') : null), 60_000, 'three webhook requests');
    await new Promise((r) => setTimeout(r, 1500));
    const bodies = receiver.to('/orders').map((r) => JSON.parse(r.body));
    expect(got.length).toBe(3);
    expect(bodies.map((b) => `${b.type}:${b.record.status}:${b.record.total}:${b.record.note}`).sort()).toEqual(['INSERT:new:10:a', 'UPDATE:new:11:bump', 'UPDATE:paid:12:bump']); // bump fired again
    } finally {
      await db.query('select pg_drop_replication_slot($1)', [slot]);
    }
  });
});
