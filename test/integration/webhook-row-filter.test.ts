// Row filters of database webhooks on the real stack (docs/delivery.md, "Row filters"): only the
// changes whose row matches are sent, the others enqueue nothing (no delivery at all); a filter is
// checked against the table at save (unknown column, unknown operator, a value its column cannot
// take), never lets the owner's text reach SQL unquoted, and a change of it applies to the next
// statement. A column a filter reads cannot be dropped without CASCADE, which drops the trigger too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startWorkers, type Worker } from '../../src/delivery/index.js';
import { eventually } from '../helpers/env.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { Receiver } from '../helpers/receiver.js';

describe('webhook row filters', () => {
  let svc: TestService;
  let project: TestProject;
  let db: pg.Client;
  let workers: Worker[] = [];
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start('127.0.0.2');
    svc = await startTestService({ roles: ['api'], env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32' } });
    workers = await startWorkers(svc.ctx, ['dispatcher', 'projector']);
    project = await svc.project('pro');
    db = new pg.Client({ connectionString: project.databaseUrl });
    await db.connect();
    await db.query(`create table public.orders (id int primary key, status text, amount numeric(10,2), note text)`);
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await db?.end();
    await svc?.stop();
    await receiver.stop();
  });

  const call = (method: string, path: string, body?: unknown) => svc.api(project.ownerToken, method, `/v1/projects/${project.ref}${path}`, body);
  const bodies = (path: string) => receiver.to(path).map((r) => JSON.parse(r.body));

  it('sends only the matching changes, and nothing at all is enqueued for the others', async () => {
    const hook = await call('POST', '/webhooks', {
      table: 'public.orders',
      events: ['INSERT', 'UPDATE', 'DELETE'],
      url: `${receiver.url}/paid`,
      filter: { or: [{ status: 'paid', amount: { gt: 100 } }, { status: { in: ['refunded', 'disputed'] } }] },
    });
    expect(hook.status).toBe(201);
    expect(hook.body.filter).toEqual({ or: [{ status: 'paid', amount: { gt: 100 } }, { status: { in: ['refunded', 'disputed'] } }] });
    await db.query(`insert into public.orders values (1, 'paid', 150, 'a'), (2, 'paid', 50, 'b'), (3, 'open', 500, 'c'), (4, 'refunded', 10, 'd'), (5, null, null, 'e')`);
    await db.query(`update public.orders set status = 'disputed' where id = 3`); // matches now
    await db.query(`update public.orders set note = 'x' where id = 2`); // still does not match
    await db.query(`delete from public.orders where id = 1`); // the deleted row matched
    await eventually(async () => receiver.to('/paid').length >= 4, 30_000, 'the matching changes');
    // the non-matching ones never became messages: no delivery exists for them
    await eventually(async () => (await call('GET', `/outbox/deliveries?webhook_id=${hook.body.id}&limit=100`)).body.deliveries.length === 4, 30_000, 'four deliveries');
    const seen = bodies('/paid').map((b) => `${b.type}:${(b.record ?? b.old_record).id}`).sort();
    expect(seen).toEqual(['DELETE:1', 'INSERT:1', 'INSERT:4', 'UPDATE:3']);
  });

  it('reads the row before an UPDATE with old., and applies a changed filter to the next statement', async () => {
    await db.query(`create table public.tickets (id int primary key, state text not null)`);
    const hook = await call('POST', '/webhooks', { table: 'public.tickets', events: ['INSERT', 'UPDATE'], url: `${receiver.url}/closed`, filter: { state: 'closed', 'old.state': { ne: 'closed' } } });
    expect(hook.status).toBe(201);
    await db.query(`insert into public.tickets values (1, 'open'), (2, 'closed')`); // INSERT has no old row: old.state ne 'closed' is false
    await db.query(`update public.tickets set state = 'closed' where id = 1`); // open -> closed: matches
    await db.query(`update public.tickets set state = 'closed' where id = 2`); // closed -> closed: does not
    await eventually(async () => receiver.to('/closed').length >= 1, 30_000, 'the closing');
    const patched = await call('PATCH', `/webhooks/${hook.body.id}`, { filter: { state: { null: false } } });
    expect(patched.status).toBe(200);
    await db.query(`update public.tickets set state = 'open' where id = 2`);
    await eventually(async () => receiver.to('/closed').length >= 2, 30_000, 'the change after the new filter');
    const seen = bodies('/closed').map((b) => `${b.type}:${b.record.id}:${b.record.state}`);
    expect(seen).toEqual(['UPDATE:1:closed', 'UPDATE:2:open']);
  });

  it('refuses a filter its table cannot run, naming the column or operator, and keeps the owner\'s text out of SQL', async () => {
    const base = { table: 'public.orders', events: ['INSERT'], url: `${receiver.url}/x` };
    const cases: [unknown, number, string, string][] = [
      [{ nope: 1 }, 400, 'column_not_found', '"nope"'],
      [{ status: { like: 'p%' } }, 400, 'invalid_filter', '"like"'],
      [{ amount: { gt: 'lots' } }, 400, 'invalid_filter', 'numeric'],
      [{ amount: { gt: { x: 1 } } }, 400, 'invalid_filter', 'amount'],
      [{ status: { in: [] } }, 400, 'invalid_filter', 'in'],
      [{ and: [] }, 400, 'invalid_filter', 'and'],
      [{}, 400, 'invalid_filter', 'empty'],
      [{ 'status"; drop table public.orders; --': 'x' }, 400, 'column_not_found', 'drop table'],
    ];
    for (const [filter, status, code, mention] of cases) {
      const r = await call('POST', '/webhooks', { ...base, filter });
      expect(r.status, JSON.stringify(filter)).toBe(status);
      expect(r.body.code, JSON.stringify(filter)).toBe(code);
      expect(r.body.message, JSON.stringify(filter)).toContain(mention);
    }
    // a value is a literal, whatever it holds
    const sneaky = await call('POST', '/webhooks', { ...base, url: `${receiver.url}/sneaky`, filter: { note: "x'); drop table public.orders; --" } });
    expect(sneaky.status).toBe(201);
    await db.query(`insert into public.orders values (10, 'open', 1, $1), (11, 'open', 1, 'y')`, ["x'); drop table public.orders; --"]);
    await eventually(async () => receiver.to('/sneaky').length === 1, 30_000, 'the one row with that note');
    expect((await db.query('select count(*)::int as n from public.orders')).rows[0].n).toBeGreaterThan(0);
  });

  it('keeps a column a filter reads from being dropped, and names it when the trigger is installed again', async () => {
    await db.query(`create table public.items (id int primary key, kind text, size int)`);
    const hook = await call('POST', '/webhooks', { table: 'public.items', events: ['INSERT'], url: `${receiver.url}/items`, filter: { kind: 'book' } });
    expect(hook.status).toBe(201);
    // the trigger depends on the column: a plain drop is refused by PostgreSQL
    await expect(db.query('alter table public.items drop column kind')).rejects.toThrow(/depend/);
    // CASCADE drops the trigger with it: changes stop firing (documented), and a re-install names the column
    await db.query('alter table public.items drop column kind cascade');
    const again = await call('PATCH', `/webhooks/${hook.body.id}`, { events: ['INSERT', 'UPDATE'] });
    expect(again.status).toBe(400);
    expect(again.body.code).toBe('column_not_found');
    expect(again.body.message).toContain('"kind"');
    const fixed = await call('PATCH', `/webhooks/${hook.body.id}`, { filter: { size: { gte: 10 } } });
    expect(fixed.status).toBe(200);
    await db.query(`insert into public.items values (1, 5), (2, 20)`);
    await eventually(async () => receiver.to('/items').length === 1, 30_000, 'the large item');
    expect(bodies('/items')[0].record.id).toBe(2);
  });
});
