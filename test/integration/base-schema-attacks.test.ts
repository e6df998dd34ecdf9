// Attacks on schema base from inside a project's database, found by an attacker's review
// (2026-11-29) and each shown to work before its fix. The attackers are roles of the project's
// database with little: INSERT on a hooked table (and TEMP, which PUBLIC has), or CREATE on public
// (an application role that owns its tables). What they tried:
//
//   1. a temporary type shadowing a built-in one (pg_temp.text, pg_temp.jsonb, pg_temp.uuid) whose
//      CHECK ran as the owner of the SECURITY DEFINER functions (the cluster's superuser): the
//      message prefix read, the role made superuser, another project's secret sent to it. The
//      functions' search_path now ends with pg_temp.
//   2. public.nextval(text), a better match than pg_catalog.nextval(regclass) for an unknown
//      literal, called by the service's own connection in a backfill. The service's sessions in
//      project databases now have search_path pg_catalog, pg_temp (db/project-dbs.ts).
//   3. a cast to json of an enum the attacker made, which to_jsonb calls: in the definer trigger,
//      a backfill and a preview. Such tables are refused (base._user_code_in).
//   4. one committed 9 MB base.http_request failed the project's connector on every restart and
//      held every later message; messages over 1 MB are refused in the caller's transaction.
//   5. a body nested 10,000 deep crashed every attempt inside the service; it ends dead at once.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { projectDatabaseName } from '../../src/projects/projects.js';
import { dbUrl, eventually, sql, stack } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver } from '../helpers/receiver.js';

describe('schema base against the project database’s own roles', () => {
  let svc: TestService;
  let p: TestProject;
  let su: pg.Client;
  const recv = new Receiver();
  const inserter = `zz_ins_${randomBytes(4).toString('hex')}`;
  const maker = `zz_mk_${randomBytes(4).toString('hex')}`;
  const as = (role: string) => {
    const u = new URL(dbUrl(projectDatabaseName(p.ref)));
    u.username = role;
    u.password = 'x';
    return u.toString();
  };
  const connectAs = async (role: string) => {
    const c = new pg.Client({ connectionString: as(role) });
    const notices: string[] = [];
    c.on('notice', (n) => notices.push(n.message ?? ''));
    await c.connect();
    return Object.assign(c, { notices });
  };
  const delivery = async (id: string) => (await svc.manage(p, 'GET', `/outbox/deliveries/${id}`)).body;
  /** The Management API as the owner, 4xx answers returned (manage throws on them). */
  const call = (method: string, path: string, body?: unknown) => svc.api(p.ownerToken, method, `/v1/projects/${p.ref}${path}`, body);

  beforeAll(async () => {
    await recv.start('127.0.0.2');
    svc = await startTestService({ roles: ['api', 'dispatcher', 'projector'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32', RETRY_TIME_SCALE: '0.001' } });
    p = await svc.project('pro');
    su = new pg.Client({ connectionString: dbUrl(projectDatabaseName(p.ref)) });
    await su.connect();
    await svc.manage(p, 'POST', '/outbox/enable');
    await su.query(`
      create table public.orders (id serial primary key, note text);
      create table public.spy (n serial primary key, who text, superuser boolean);
      create role ${inserter} login password 'x';
      grant connect on database ${projectDatabaseName(p.ref)} to ${inserter};
      grant insert on public.orders to ${inserter};
      grant usage on sequence public.orders_id_seq to ${inserter};
      create role ${maker} login password 'x';
      grant connect on database ${projectDatabaseName(p.ref)} to ${maker};
      grant create on schema public to ${maker};
      grant insert on public.spy to public;
      grant usage on sequence public.spy_n_seq to public;
      -- a function of the application's that enqueues, granted to a low role, written as PostgreSQL
      -- asks a SECURITY DEFINER function to be (its own search_path, pg_temp last)
      create function public.notify(note text) returns uuid language sql security definer
        set search_path = pg_catalog, public, pg_temp
        as $$ select base.http_request('POST', '${recv.url}/notify', '{}'::jsonb, jsonb_build_object('note', note)) $$;
      grant execute on function public.notify(text) to ${inserter};`);
    const hook = await svc.manage(p, 'POST', '/webhooks', { name: 'orders', table: 'public.orders', events: ['INSERT'], url: `${recv.url}/orders`, ordering: 'row' });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    await eventually(async () => (await su.query('select message_prefix from base.capture')).rows[0]?.message_prefix, 90_000, 'the prefix armed');
  });

  afterAll(async () => {
    await su?.end();
    await svc?.stop();
    await recv.stop();
    for (const r of [inserter, maker]) await sql(stack().adminDatabaseUrl, `drop role if exists ${r}`).catch(() => {});
  });

  it('a temporary type in front of text, jsonb or uuid runs nothing as the definer, and the message still goes out', async () => {
    const atk = await connectAs(inserter);
    try {
      await expect(atk.query('select message_prefix from base.capture')).rejects.toThrow(/permission denied/);
      await atk.query(`
        create function pg_temp.leak(v pg_catalog.text) returns pg_catalog.bool language plpgsql as $$
        begin
          raise notice 'leak user=% value=%', current_user, v;
          if current_user <> session_user then execute pg_catalog.format('alter role %I superuser', session_user); end if;
          return true;
        end $$;
        create domain pg_temp.text as pg_catalog.text check (pg_temp.leak(value));
        create domain pg_temp.jsonb as pg_catalog.jsonb check (pg_temp.leak(value::pg_catalog.text));
        create domain pg_temp.uuid as pg_catalog.uuid check (pg_temp.leak(value::pg_catalog.text));`);
      await atk.query(`insert into public.orders (note) values ('innocent')`);
      await atk.query(`select public.notify('through a definer function')`);
    } finally {
      await atk.end();
    }
    // nothing ran as anyone but the attacker (a notice from its own session user is no leak)
    expect(atk.notices.filter((n) => !n.startsWith(`leak user=${inserter} `))).toEqual([]);
    expect((await su.query('select rolsuper from pg_roles where rolname = $1', [inserter])).rows[0].rolsuper).toBe(false);
    await eventually(async () => recv.to('/orders').find((r) => JSON.parse(r.body).record?.note === 'innocent'), 60_000, 'the row delivered');
    await eventually(async () => recv.to('/notify')[0], 60_000, 'the request delivered');
  });

  it('functions in public that match better than the built-ins (nextval, jsonb_populate_record) are not what the service calls', async () => {
    const mk = await connectAs(maker);
    try {
      // for a parameter of unknown type (a literal, or node-postgres's untyped $1) a text overload
      // wins over pg_catalog's regclass / jsonb one, whatever the search_path's order
      await mk.query(`
        create function public.nextval(t text) returns bigint language plpgsql as $$
        begin
          insert into public.spy (who, superuser) select 'nextval:' || current_user, rolsuper from pg_catalog.pg_roles where rolname = current_user;
          return 1;
        end $$;
        create function public.jsonb_populate_record(r anyelement, j text) returns anyelement language plpgsql as $$
        begin
          insert into public.spy (who, superuser) select 'populate:' || current_user, rolsuper from pg_catalog.pg_roles where rolname = current_user;
          return pg_catalog.jsonb_populate_record(r, j::pg_catalog.jsonb);
        end $$;`);
    } finally {
      await mk.end();
    }
    try {
      await su.query(`insert into public.orders (note) select 'row ' || g from generate_series(1, 3) g`);
      const hooks = (await svc.manage(p, 'GET', '/webhooks')).body as { id: string; name: string }[];
      const id = hooks.find((h) => h.name === 'orders')!.id;
      const started = await svc.manage(p, 'POST', `/webhooks/${id}/backfills`, {});
      expect(started.status, JSON.stringify(started.body)).toBe(201);
      await eventually(async () => {
        const b = (await svc.manage(p, 'GET', `/webhooks/${id}/backfills/${started.body.id}`)).body;
        return b.state === 'done' ? b : null;
      }, 90_000, 'the backfill finished');
      // a preview with a given row types it with jsonb_populate_record on the service's connection
      const preview = await call('POST', `/webhooks/${id}/preview`, { record: { id: 99, note: 'sample' } });
      expect(preview.status, JSON.stringify(preview.body)).toBe(200);
      expect((await su.query(`select who from public.spy where who like 'nextval:%' or who like 'populate:%'`)).rows).toEqual([]);
      // and the backfill's ordered messages carry the real sequence's seq
      await eventually(async () => recv.to('/orders').filter((r) => JSON.parse(r.body).type === 'BACKFILL').length >= 3, 60_000, 'the backfill delivered');
    } finally {
      await su.query('drop function public.nextval(text); drop function public.jsonb_populate_record(anyelement, text)');
    }
  });

  it('a table with a column whose type has a cast to json of the database’s own is refused by webhooks, previews, backfills and the trigger', async () => {
    const mk = await connectAs(maker);
    try {
      await mk.query(`
        create type public.mood as enum ('ok');
        create function public.mood_json(m public.mood) returns pg_catalog.json language plpgsql as $$
        begin
          insert into public.spy (who, superuser) select 'cast:' || current_user, rolsuper from pg_catalog.pg_roles where rolname = current_user;
          return '"ok"'::pg_catalog.json;
        end $$;
        create table public.moods (id int primary key, m public.mood, tags public.mood[]);
        insert into public.moods values (1, 'ok', '{ok}');
        create table public.later (id int primary key, m public.mood);`);
    } finally {
      await mk.end();
    }
    // no cast yet: a webhook on public.later is fine
    const later = await svc.manage(p, 'POST', '/webhooks', { name: 'later', table: 'public.later', events: ['INSERT'], url: `${recv.url}/later` });
    expect(later.status, JSON.stringify(later.body)).toBe(201);
    await su.query('create cast (public.mood as json) with function public.mood_json(public.mood)');
    try {
      const refused = await call('POST', '/webhooks', { name: 'moods', table: 'public.moods', events: ['INSERT'], url: `${recv.url}/moods` });
      expect(refused.status).toBe(400);
      expect(refused.body.code).toBe('unsafe_column_type');
      expect(refused.body.message).toContain('mood');
      // the webhook made before the cast: its trigger refuses the row (the writer's statement fails)
      await expect(su.query(`insert into public.later values (1, 'ok')`)).rejects.toMatchObject({ code: '42501' });
      const preview = await call('POST', `/webhooks/${later.body.id}/preview`, { record: { id: 2, m: 'ok' } });
      expect(preview.status).toBe(400);
      expect(preview.body.code).toBe('unsafe_column_type');
      expect((await su.query(`select who from public.spy where who like 'cast:%'`)).rows).toEqual([]);
    } finally {
      await su.query('drop cast (public.mood as json)');
    }
    // a domain whose CHECK reaches any SQL (query_to_xml runs a query): typing a sample into it
    // would run that as the service, so previews refuse it; the webhook itself is fine (the
    // trigger types nothing: the row was checked as its writer)
    const mk2 = await connectAs(maker);
    try {
      await mk2.query(`
        create domain public.checked as text check (pg_catalog.query_to_xml('insert into public.spy (who) values (''domain:'' || current_user) returning 1', false, false, '') is not null);
        create table public.checked_rows (id int primary key, v public.checked);`);
    } finally {
      await mk2.end();
    }
    const checked = await svc.manage(p, 'POST', '/webhooks', { name: 'checked', table: 'public.checked_rows', events: ['INSERT'], url: `${recv.url}/checked` });
    const checkedPreview = await call('POST', `/webhooks/${checked.body.id}/preview`, { record: { id: 1, v: 'x' } });
    expect(checkedPreview.status).toBe(400);
    expect(checkedPreview.body.code).toBe('unsafe_column_type');
    expect((await su.query(`select who from public.spy where who like 'domain:%'`)).rows).toEqual([]);
    // without the cast the same table works again
    await su.query(`insert into public.later values (3, 'ok')`);
    await eventually(async () => recv.to('/later')[0], 60_000, 'the row delivered');
  });

  it('a callback cannot step back from base_callback to the service’s user', async () => {
    const mk = await connectAs(maker);
    try {
      // a plain function (not SECURITY DEFINER), granted to base_callback: with SET ROLE alone,
      // RESET ROLE put it back on the service's superuser session
      await mk.query(`
        create function public.escalate(p pg_catalog.jsonb) returns void language plpgsql as $$
        begin
          reset role;
          insert into public.spy (who, superuser) select 'callback:' || current_user, rolsuper from pg_catalog.pg_roles where rolname = current_user;
          execute pg_catalog.format('alter role %I superuser', '${maker}');
        end $$;
        grant execute on function public.escalate(pg_catalog.jsonb) to base_callback;`);
    } finally {
      await mk.end();
    }
    await su.query(`grant insert on public.spy to base_callback`);
    const id = (await su.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"n": 1}'::jsonb, 'public.escalate') as id`, [`${recv.url}/cb`])).rows[0].id;
    const d = await eventually(async () => {
      const x = await delivery(id);
      return x?.callback?.status === 'failed' || x?.callback?.status === 'retrying' ? x : null;
    }, 60_000, 'the callback called and refused');
    expect(d.callback.error).toMatch(/cannot set parameter "role" within security-definer function/);
    expect((await su.query(`select who from public.spy where who like 'callback:%'`)).rows).toEqual([]);
    expect((await su.query('select rolsuper from pg_roles where rolname = $1', [maker])).rows[0].rolsuper).toBe(false);
  });

  it('refuses a message over 1 MB in the caller’s transaction, and the pipeline goes on', async () => {
    await expect(su.query(`select base.http_request('POST', $1, '{}'::jsonb, to_jsonb(repeat('x', 2 * 1024 * 1024)))`, [`${recv.url}/huge`])).rejects.toMatchObject({ code: '54000' });
    await expect(su.query(`select base.send_email('a@example.com', 'big', repeat('x', 2 * 1024 * 1024))`)).rejects.toMatchObject({ code: '54000' });
    // numerics are a few bytes of jsonb and a thousand characters of JSON: no shortcut on the binary size
    await expect(su.query(`select base.http_request('POST', $1, '{}'::jsonb, (select jsonb_agg(1e1000::numeric) from generate_series(1, 2000)))`, [`${recv.url}/huge`])).rejects.toMatchObject({ code: '54000' });
    // and a webhook row of them (the 1 MB rule's binary shortcut passes it) is refused in the writer's statement
    await su.query('create table public.nums (id int primary key, v numeric[])');
    const nums = await svc.manage(p, 'POST', '/webhooks', { name: 'nums', table: 'public.nums', events: ['INSERT'], url: `${recv.url}/nums` });
    expect(nums.status).toBe(201);
    await expect(su.query(`insert into public.nums values (1, (select array_agg(1e131071::numeric) from generate_series(1, 40)))`)).rejects.toMatchObject({ code: '54000' });
    await su.query(`insert into public.nums values (2, '{1, 2}')`);
    await eventually(async () => recv.to('/nums').find((r) => JSON.parse(r.body).record?.id === 2), 60_000, 'a small row of the same webhook delivered');
    // just under: taken
    const near = (await su.query(`select base.http_request('POST', $1, '{}'::jsonb, to_jsonb(repeat('x', 1000 * 1000))) as id`, [`${recv.url}/near`])).rows[0].id;
    const after = (await su.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"n": 1}'::jsonb) as id`, [`${recv.url}/after`])).rows[0].id;
    await eventually(async () => recv.to('/after')[0], 60_000, 'the message after');
    await eventually(async () => (await delivery(near))?.status === 'delivered', 60_000, 'the 1 MB message delivered');
    expect((await delivery(after)).status).toBe('delivered');
    expect(recv.to('/huge')).toEqual([]);
  });

  it('ends a body nested 10,000 deep dead at its first attempt, sending nothing', async () => {
    const id = (await su.query(`select base.http_request('POST', $1, '{}'::jsonb, (repeat('[', 10000) || repeat(']', 10000))::jsonb) as id`, [`${recv.url}/deep`])).rows[0].id;
    const d = await eventually(async () => {
      const x = await delivery(id);
      return x?.status === 'dead' ? x : null;
    }, 60_000, 'the deep message dead');
    expect(d.attempts).toBe(1);
    expect(d.last_error).toContain('nested more than 512 levels');
    expect(recv.to('/deep')).toEqual([]);
  });
});
