// Webhooks through the Management API against the real service: validation (every private-address
// spelling, reserved headers, tables, events, timeouts), the secret shown once, rotation with a
// grace period, encryption at rest, the trigger in the project database, and the audit trail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { aad } from '../../src/lib/secret-box.js';
import { startTestService, type TestService, type TestProject } from '../helpers/service.js';

const HOOK = 'https://hooks.example.com/orders';

describe('webhooks management', () => {
  let svc: TestService;
  let p: TestProject;
  let db: pg.Client;

  beforeAll(async () => {
    // No allow-list: loopback and private literals must be refused as in production.
    svc = await startTestService({ env: { OUTBOUND_ALLOW_CIDRS: '', SIGNING_SECRET_GRACE: '2h' } });
    p = await svc.project('free');
    db = new pg.Client({ connectionString: p.databaseUrl });
    await db.connect();
    await db.query(`create table public.orders (id serial primary key, note text);
                    create schema api; create table api.items (id serial primary key);
                    create schema private; create table private.secrets (id int);
                    create view public.order_view as select * from public.orders;`);
  });
  afterAll(async () => {
    await db?.end();
    await svc?.stop();
  });

  const create = (body: unknown) => svc.api(p.ownerToken, 'POST', `/v1/projects/${p.ref}/webhooks`, body);
  const valid = { name: 'orders', table: 'public.orders', events: ['INSERT'], url: HOOK };
  const triggerDef = async (id: string) => {
    const r = await db.query('select pg_get_triggerdef(oid) as def from pg_trigger where tgname = $1', [`webhook_${id.replace(/-/g, '')}`]);
    return r.rows[0]?.def as string | undefined;
  };

  it.each([
    'http://127.0.0.1/',
    'http://127.1/',
    'http://2130706433/',
    'http://0x7f000001/',
    'http://0x7f.0.0.1/',
    'http://0177.0.0.1/',
    'http://017700000001/',
    'http://%31%32%37.0.0.1/',
    'http://127.0.0.1./',
    'http://127.0.0.1../',
    'http://10.0.0.1/',
    'http://172.16.5.4/',
    'http://192.168.1.1:8080/x',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.100.100.200/',
    'http://0.0.0.0/',
    'http://0/',
    'http://[::1]/',
    'http://[::]/',
    'http://[0:0:0:0:0:0:0:1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[0:0:0:0:0:ffff:a00:1]/',
    'http://[fe80::1]/',
    'http://[fc00::1]/',
    'http://[fd00:ec2::254]/',
    'https://localhost/',
    'http://api.localhost/',
    'http://metadata.google.internal/computeMetadata/v1/',
  ])('refuses %s with 400 url_not_allowed', async (url) => {
    const r = await create({ ...valid, url });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('url_not_allowed');
  });

  it.each(['ftp://example.com/x', 'javascript:alert(1)', 'not a url', 'http://', 'https://user:pw@example.com/', 'file:///etc/passwd'])(
    'refuses %s with 400 invalid_url',
    async (url) => {
      const r = await create({ ...valid, url });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('invalid_url');
    },
  );

  it.each([
    [{ table: 'orders' }, 'validation_failed'],
    [{ table: 'private.secrets' }, 'validation_failed'],
    [{ table: 'base.outbox' }, 'validation_failed'],
    [{ table: 'public.missing' }, 'table_not_found'],
    [{ table: 'public.order_view' }, 'table_not_found'],
    [{ table: 'public.ORDERS' }, 'table_not_found'],
    [{ events: [] }, 'validation_failed'],
    [{ events: ['insert'] }, 'validation_failed'],
    [{ events: ['TRUNCATE'] }, 'validation_failed'],
    [{ events: ['INSERT', 'INSERT'] }, 'validation_failed'],
    [{ events: 'INSERT' }, 'validation_failed'],
    [{ timeout_ms: 99 }, 'validation_failed'],
    [{ timeout_ms: 60_001 }, 'validation_failed'],
    [{ timeout_ms: 1500.5 }, 'validation_failed'],
    [{ timeout_ms: '1000' }, 'validation_failed'],
    [{ headers: { 'webhook-id': 'x' } }, 'reserved_header'],
    [{ headers: { 'Webhook-Timestamp': '1' } }, 'reserved_header'],
    [{ headers: { 'WEBHOOK-SIGNATURE': 'v1,x' } }, 'reserved_header'],
    [{ headers: { 'Content-Length': '5' } }, 'reserved_header'],
    [{ headers: { Host: 'internal' } }, 'reserved_header'],
    [{ headers: { 'x-a': 1 } }, 'validation_failed'],
    [{ headers: { 'x-a': 'line\r\nx-injected: 1' } }, 'validation_failed'],
    [{ headers: { 'bad name': 'x' } }, 'validation_failed'],
    [{ headers: { 'x-a': 'a', 'X-A': 'b' } }, 'validation_failed'],
    [{ headers: { authorization: 'Bearer {{secret:bad-name}}' } }, 'validation_failed'],
    [{ headers: ['x'] }, 'validation_failed'],
    [{ name: '' }, 'validation_failed'],
    [{ surprise: true }, 'validation_failed'],
    [{ signing_secret: 'whsec_mine' }, 'validation_failed'],
    [{ rotate_secret: true }, 'validation_failed'],
  ])('refuses %j with %s', async (change, code) => {
    const r = await create({ ...valid, ...change });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code, message: expect.any(String) });
  });

  it('refuses a body without table, events or url', async () => {
    for (const k of ['table', 'events', 'url'] as const) {
      const { [k]: _, ...rest } = valid;
      const r = await create(rest);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('validation_failed');
    }
  });

  let id: string;
  let firstSecret: string;

  it('creates a webhook: 201 with the signing secret once, the outbox enabled and the trigger installed', async () => {
    const r = await create({ ...valid, table: 'public.orders', headers: { Authorization: 'Bearer {{secret:ORDERS_TOKEN}}', 'X-Tenant': 'acme' } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      name: 'orders',
      table: 'public.orders',
      events: ['INSERT'],
      url: HOOK,
      headers: { Authorization: 'Bearer {{secret:ORDERS_TOKEN}}', 'X-Tenant': 'acme' },
      timeout_ms: 10_000,
      enabled: true,
      previous_secret_expires_at: null,
    });
    expect(r.body.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(r.body.signing_secret.slice(6), 'base64')).toHaveLength(32);
    id = r.body.id;
    firstSecret = r.body.signing_secret;

    const project = await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}`);
    expect(project.body.outbox_enabled).toBe(true);
    expect(await triggerDef(id)).toMatch(/AFTER INSERT ON public\.orders FOR EACH ROW EXECUTE FUNCTION base\.webhook_trigger/);
  });

  it('never shows the secret again: list and one', async () => {
    const list = await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}/webhooks`);
    expect(list.status).toBe(200);
    expect(list.body.map((w: { id: string }) => w.id)).toEqual([id]);
    const one = await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}/webhooks/${id}`);
    expect(one.status).toBe(200);
    expect(one.body.id).toBe(id);
    for (const body of [list.body, one.body]) {
      expect(JSON.stringify(body)).not.toContain(firstSecret.slice(6, 30));
      expect(JSON.stringify(body)).not.toContain('signing_secret"');
    }
  });

  it('stores the signing secret encrypted: the bytes do not contain it, and they open to it', async () => {
    const r = await svc.ctx.db.query('select secret_enc from webhook_signing_secrets where webhook_id = $1', [id]);
    expect(r.rows).toHaveLength(1);
    const stored: Buffer = r.rows[0].secret_enc;
    expect(stored.includes(Buffer.from(firstSecret))).toBe(false);
    expect(stored.includes(Buffer.from(firstSecret.slice(6), 'base64'))).toBe(false);
    expect(stored.includes(Buffer.from(firstSecret.slice(6)))).toBe(false);
    expect(svc.ctx.box.open(stored, aad.signingSecret(id))).toBe(firstSecret);
  });

  it('rotates: a new secret once, the previous one kept for the grace period', async () => {
    const r = await svc.api(p.ownerToken, 'PATCH', `/v1/projects/${p.ref}/webhooks/${id}`, { rotate_secret: true });
    expect(r.status).toBe(200);
    expect(r.body.signing_secret).toMatch(/^whsec_/);
    expect(r.body.signing_secret).not.toBe(firstSecret);
    const grace = Date.parse(r.body.previous_secret_expires_at) - Date.now();
    expect(grace).toBeGreaterThan(2 * 3600_000 - 10 * 60_000);
    expect(grace).toBeLessThanOrEqual(2 * 3600_000);

    const rows = (await svc.ctx.db.query('select secret_enc, expires_at from webhook_signing_secrets where webhook_id = $1 order by expires_at nulls last', [id])).rows;
    expect(rows.map((x) => svc.ctx.box.open(x.secret_enc, aad.signingSecret(id)))).toEqual([firstSecret, r.body.signing_secret]);
    expect(rows[1].expires_at).toBeNull();

    const again = await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}/webhooks/${id}`);
    expect(again.body.signing_secret).toBeUndefined();
    expect(again.body.previous_secret_expires_at).toBe(r.body.previous_secret_expires_at);
  });

  it('patches fields partially and re-installs the trigger when events, table or enabled change', async () => {
    const r = await svc.api(p.ownerToken, 'PATCH', `/v1/projects/${p.ref}/webhooks/${id}`, { events: ['INSERT', 'UPDATE', 'DELETE'], timeout_ms: 60_000 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ events: ['INSERT', 'UPDATE', 'DELETE'], timeout_ms: 60_000, url: HOOK, name: 'orders' });
    expect(r.body.signing_secret).toBeUndefined();
    expect(await triggerDef(id)).toMatch(/AFTER INSERT OR DELETE OR UPDATE ON public\.orders/);

    // the same headers in another order are no change (and leave no audit entry)
    const same = await svc.api(p.ownerToken, 'PATCH', `/v1/projects/${p.ref}/webhooks/${id}`, { headers: { 'X-Tenant': 'acme', Authorization: 'Bearer {{secret:ORDERS_TOKEN}}' }, name: 'orders' });
    expect(same.status).toBe(200);
    expect(same.body.updated_at).toBe(r.body.updated_at);

    const moved = await svc.api(p.ownerToken, 'PATCH', `/v1/projects/${p.ref}/webhooks/${id}`, { table: 'api.items' });
    expect(moved.body.table).toBe('api.items');
    expect(await triggerDef(id)).toMatch(/ON api\.items/);

    const off = await svc.api(p.ownerToken, 'PATCH', `/v1/projects/${p.ref}/webhooks/${id}`, { enabled: false });
    expect(off.body.enabled).toBe(false);
    expect(await triggerDef(id)).toBeUndefined();
    const on = await svc.api(p.ownerToken, 'PATCH', `/v1/projects/${p.ref}/webhooks/${id}`, { enabled: true });
    expect(on.body.enabled).toBe(true);
    expect(await triggerDef(id)).toMatch(/ON api\.items/);
  });

  it('validates PATCH bodies like creation', async () => {
    const path = `/v1/projects/${p.ref}/webhooks/${id}`;
    for (const [body, code] of [
      [{}, 'validation_failed'],
      [{ url: 'http://[::ffff:10.0.0.1]/' }, 'url_not_allowed'],
      [{ headers: { 'webhook-signature': 'x' } }, 'reserved_header'],
      [{ table: 'public.nope' }, 'table_not_found'],
      [{ rotate_secret: 'yes' }, 'validation_failed'],
      [{ id: 'x' }, 'validation_failed'],
    ] as const) {
      const r = await svc.api(p.ownerToken, 'PATCH', path, body);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe(code);
    }
    const missing = await svc.api(p.ownerToken, 'PATCH', `/v1/projects/${p.ref}/webhooks/00000000-0000-4000-8000-000000000000`, { name: 'x' });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('webhook_not_found');
    const badId = await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}/webhooks/not-a-uuid`);
    expect(badId.status).toBe(400);
  });

  it('deletes: 204, the trigger dropped, then 404', async () => {
    const r = await svc.api(p.ownerToken, 'DELETE', `/v1/projects/${p.ref}/webhooks/${id}`);
    expect(r.status).toBe(204);
    expect(await triggerDef(id)).toBeUndefined();
    expect((await svc.ctx.db.query('select 1 from webhook_signing_secrets where webhook_id = $1', [id])).rowCount).toBe(0);
    const again = await svc.api(p.ownerToken, 'DELETE', `/v1/projects/${p.ref}/webhooks/${id}`);
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('webhook_not_found');
  });

  it('records every change in the audit trail, newest first, without secrets or header values', async () => {
    const r = await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}/audit`);
    expect(r.status).toBe(200);
    expect(r.body.map((e: { action: string }) => e.action)).toEqual([
      'webhook.delete',
      'webhook.update',
      'webhook.update',
      'webhook.update',
      'webhook.update',
      'webhook.rotate_secret',
      'webhook.create',
    ]);
    const created = r.body.at(-1);
    expect(created).toMatchObject({ resource_type: 'webhook', resource_id: id, actor: { owner_id: p.ownerId, token_id: expect.any(String) } });
    expect(created.details).toMatchObject({ table: 'public.orders', events: ['INSERT'], header_names: ['Authorization', 'X-Tenant'], url_origin: 'https://hooks.example.com' });
    const text = JSON.stringify(r.body);
    expect(text).not.toContain('whsec_');
    expect(text).not.toContain('acme');

    const page = await svc.api(p.ownerToken, 'GET', `/v1/projects/${p.ref}/audit?limit=2&before=${r.body[1].id}`);
    expect(page.body.map((e: { id: string }) => e.id)).toEqual([r.body[2].id, r.body[3].id]);
  });
});
