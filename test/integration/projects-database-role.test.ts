// The login a managed project's owner is given (create-project's database_url). Found by an
// attacker's review (2026-11-29): it was the cluster's admin login, a superuser, so with project A's
// URL the review connected to the control database and read project B's row and secrets. It is now
// a role of the project's own (src/projects/managed-database.ts): the owner of its database, no
// superuser, let into no other database, allowed to enqueue (base.http_request, base.send_email)
// and to own what its webhooks fire on, and unable to read what schema base keeps from it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver } from '../helpers/receiver.js';

describe('the database login a managed project’s owner is given', () => {
  let svc: TestService;
  let a: TestProject;
  let b: TestProject;
  const recv = new Receiver();
  const withApp = async <T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  /** `url` with another database */
  const other = (url: string, db: string) => {
    const u = new URL(url);
    u.pathname = `/${db}`;
    return u.toString();
  };

  beforeAll(async () => {
    await recv.start('127.0.0.2');
    svc = await startTestService({ roles: ['api', 'dispatcher', 'projector'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32' } });
    a = await svc.project('pro');
    b = await svc.project('pro');
    await svc.manage(a, 'POST', '/outbox/enable');
    await svc.manage(b, 'PUT', '/secrets/TOKEN', { value: 'secret-of-b' });
  });
  afterAll(async () => {
    await svc?.stop();
    await recv.stop();
  });

  it('is the project’s own role, not a superuser, and reaches neither the control database nor another project’s', async () => {
    const u = new URL(a.appDatabaseUrl);
    expect(u.username).toBe(`app_${a.ref.replace(/-/g, '_')}`);
    expect(u.password.length).toBeGreaterThan(20);
    const me = await withApp(a.appDatabaseUrl, async (c) => (await c.query('select rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls from pg_roles where rolname = current_user')).rows[0]);
    expect(me).toEqual({ rolsuper: false, rolcreaterole: false, rolcreatedb: false, rolreplication: false, rolbypassrls: false });
    await expect(withApp(other(a.appDatabaseUrl, svc.controlDb), async () => 'in')).rejects.toThrow(/permission denied for database/);
    await expect(withApp(other(a.appDatabaseUrl, new URL(b.databaseUrl).pathname.slice(1)), async () => 'in')).rejects.toThrow(/permission denied for database/);
    // and B's own role cannot get into A's database either
    await expect(withApp(other(b.appDatabaseUrl, new URL(a.databaseUrl).pathname.slice(1)), async () => 'in')).rejects.toThrow(/permission denied for database/);
  });

  it('owns its tables, enqueues, and has its webhooks fire, without reading what base keeps', async () => {
    await withApp(a.appDatabaseUrl, (c) => c.query('create table public.orders (id serial primary key, note text)'));
    await svc.manage(a, 'POST', '/webhooks', { name: 'orders', table: 'public.orders', events: ['INSERT'], url: `${recv.url}/orders` });
    await withApp(a.appDatabaseUrl, async (c) => {
      await c.query(`insert into public.orders (note) values ('from the app')`);
      await c.query(`select base.http_request('POST', $1, '{}'::jsonb, '{"n": 1}'::jsonb)`, [`${recv.url}/direct`]);
      await expect(c.query('select message_prefix from base.capture')).rejects.toThrow(/permission denied/);
      await expect(c.query(`select base._enqueue('http', '{}'::jsonb)`)).rejects.toThrow(/permission denied/);
      await expect(c.query('select pg_create_logical_replication_slot($1, $2)', ['mine', 'pgoutput'])).rejects.toThrow(/permission denied|must be superuser|replication/i);
    });
    await eventually(async () => recv.to('/orders').find((r) => JSON.parse(r.body).record?.note === 'from the app'), 60_000, 'the webhook delivered');
    await eventually(async () => recv.to('/direct')[0], 60_000, 'the request delivered');
  });
});
