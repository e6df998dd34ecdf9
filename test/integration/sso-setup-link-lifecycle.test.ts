// A setup link is single-use (docs/sso.md, "Single use"): the moment its provider goes live, by whatever
// path, the link is marked used in its own row, and nothing brings it back: not deleting the
// provider, not deleting a draft. Through the real service (the owner's Management API, the setup
// page's API with the link's secret as the bearer, a test sign-in answered by the suite's SAML IdP),
// plus the migration's backfill and trigger on a database of its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/db/pool.js';
import { migrate, readMigrations } from '../../src/db/migrate.js';
import { createDatabase, dropDatabase, uniqueName } from '../helpers/env.js';
import { postToAcs, readAuthnRequest, TestIdp } from '../helpers/saml-idp.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

let svc: TestService;
let owner: TestProject;
const idp = new TestIdp({ entityId: 'https://idp.lifecycle.test/saml' });

beforeAll(async () => {
  svc = await startTestService();
  owner = await svc.project('enterprise');
});
afterAll(async () => {
  await svc?.stop();
});

type Link = { id: string; secret: string; provider_id: string };
const links = () => `/v1/projects/${owner.ref}/auth/sso/setup-links`;
const providerPath = (id: string) => `/v1/projects/${owner.ref}/auth/providers/sso/${id}`;
const makeLink = async (domains: string[]): Promise<Link> => {
  const r = await svc.api(owner.ownerToken, 'POST', links(), { domains, kind: 'saml' });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { ...r.body, secret: new URL(r.body.url).hash.slice(1) };
};
const page = async (secret: string, method: string, path: string, body?: unknown) => {
  const headers: Record<string, string> = { authorization: `Bearer ${secret}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${svc.url}/v1/sso-setup${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};
const saveDraft = async (link: Link) => {
  const r = await page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: idp.metadataXml() });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};
/** A passing test sign-in as `email`; returns the test's id. */
const passTest = async (link: Link, email: string): Promise<string> => {
  const started = await page(link.secret, 'POST', '/test');
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const req = readAuthnRequest(started.body.url);
  const info = await page(link.secret, 'GET', '');
  const sp = { entityId: info.body.saml.sp_entity_id, acsUrl: info.body.saml.acs_url };
  const back = await postToAcs(req.acsUrl, { SAMLResponse: idp.signedResponse({ sp, requestId: req.id, nameId: email } as never), RelayState: req.relayState! });
  const id = back.searchParams.get('test')!;
  const result = await page(link.secret, 'GET', `/tests/${id}`);
  expect(result.body, JSON.stringify(result.body)).toMatchObject({ ok: true, current: true });
  return id;
};
const listed = async (link: Link) => (await svc.api(owner.ownerToken, 'GET', links())).body.items.find((l: { id: string }) => l.id === link.id);

/** Every route of the setup page answers 410 with this state, and writes nothing. */
async function goneEverywhere(link: Link, state: string, testId = '00000000-0000-4000-8000-000000000000') {
  const calls: [string, string, unknown?][] = [
    ['GET', ''],
    ['PUT', '/provider', { kind: 'saml', metadata_xml: idp.metadataXml() }],
    ['POST', '/test'],
    ['GET', `/tests/${testId}`],
    ['POST', '/activate'],
  ];
  for (const [method, path, body] of calls) {
    const r = await page(link.secret, method, path, body);
    expect([r.status, r.body.code, r.body.details], `${method} ${path}`).toEqual([410, 'sso_setup_link_gone', { state }]);
  }
}

describe('setup link lifecycle: single use', () => {
  it('activation by the link uses it up; deleting the provider afterwards does not bring it back', async () => {
    const link = await makeLink(['act.lifecycle.test']);
    await saveDraft(link);
    const testId = await passTest(link, 'ann@act.lifecycle.test');
    const on = await page(link.secret, 'POST', '/activate');
    expect(on.status, JSON.stringify(on.body)).toBe(200);
    const row = await listed(link);
    expect(row).toMatchObject({ state: 'used', activated_at: expect.any(String), used_at: expect.any(String) });
    await goneEverywhere(link, 'used', testId);

    expect((await svc.api(owner.ownerToken, 'DELETE', providerPath(link.provider_id))).status).toBe(200);
    expect(await listed(link)).toMatchObject({ state: 'used', used_at: row.used_at });
    await goneEverywhere(link, 'used', testId);
    // nothing was made again under the reserved id, and our SP metadata for it is gone
    expect((await svc.ctx.db.query('select 1 from sso_providers where id = $1', [link.provider_id])).rowCount).toBe(0);
    expect((await fetch(`${owner.projectUrl}/auth/v1/sso/saml/metadata/${link.provider_id}`)).status).toBe(404);
  });

  it("the owner enabling the draft (PATCH enabled: true) uses the link up, stored; deleting the provider then leaves it used: 410 on every route", async () => {
    const link = await makeLink(['owner.lifecycle.test']);
    await saveDraft(link);
    expect((await listed(link)).state).toBe('active');

    const enabled = await svc.api(owner.ownerToken, 'PATCH', providerPath(link.provider_id), { enabled: true });
    expect(enabled.status, JSON.stringify(enabled.body)).toBe(200);
    expect(enabled.body).toMatchObject({ enabled: true, draft: false });
    const stored = (await svc.ctx.db.query('select used_at, activated_at from sso_setup_links where id = $1', [link.id])).rows[0];
    expect(stored.used_at).toBeInstanceOf(Date);
    expect(stored.activated_at).toBeNull(); // the link holder did not activate it
    expect(await listed(link)).toMatchObject({ state: 'used', activated_at: null });
    await goneEverywhere(link, 'used');

    // the owner turns it off again, then deletes it: the link stays used
    expect((await svc.api(owner.ownerToken, 'PATCH', providerPath(link.provider_id), { enabled: false })).status).toBe(200);
    expect((await listed(link)).state).toBe('used');
    expect((await svc.api(owner.ownerToken, 'DELETE', providerPath(link.provider_id))).status).toBe(200);
    expect((await listed(link)).state).toBe('used');
    await goneEverywhere(link, 'used');
    expect((await svc.ctx.db.query('select 1 from sso_providers where id = $1', [link.provider_id])).rowCount).toBe(0);
  });

  it('any other write that makes the draft live uses the link up in the same transaction (the trigger)', async () => {
    const routed = await makeLink(['sql1.lifecycle.test']);
    await saveDraft(routed);
    const c = await svc.ctx.db.connect();
    try {
      await c.query('begin');
      await c.query('update sso_providers set enabled = true where id = $1', [routed.provider_id]);
      // inside the transaction already; a rollback would undo both
      expect((await c.query('select used_at from sso_setup_links where id = $1', [routed.id])).rows[0].used_at).toBeInstanceOf(Date);
      await c.query('rollback');
    } finally {
      c.release();
    }
    expect((await listed(routed)).state).toBe('active');
    await svc.ctx.db.query('update sso_providers set enabled = true where id = $1', [routed.provider_id]);
    expect((await listed(routed)).state).toBe('used');

    // no longer a draft, even if disabled, counts as live as well
    const undrafted = await makeLink(['sql2.lifecycle.test']);
    await saveDraft(undrafted);
    await svc.ctx.db.query('update sso_providers set draft = false where id = $1', [undrafted.provider_id]);
    expect((await listed(undrafted)).state).toBe('used');
    await svc.ctx.db.query('delete from sso_providers where id = $1', [undrafted.provider_id]);
    await goneEverywhere(undrafted, 'used');
  });

  it('a draft the owner deletes before it ever went live leaves the link active: the holder may save again', async () => {
    const link = await makeLink(['draft.lifecycle.test']);
    await saveDraft(link);
    await passTest(link, 'bob@draft.lifecycle.test');
    expect((await svc.api(owner.ownerToken, 'DELETE', providerPath(link.provider_id))).status).toBe(200);
    // nothing went live, so the link's work is not done
    expect(await listed(link)).toMatchObject({ state: 'active', used_at: null });
    const info = await page(link.secret, 'GET', '');
    expect([info.status, info.body.provider, info.body.can_activate]).toEqual([200, null, false]);
    // the old passing test does not carry over to a new draft
    expect((await page(link.secret, 'POST', '/activate')).body.code).toBe('sso_setup_test_required');
    const again = await saveDraft(link);
    expect(again).toMatchObject({ id: link.provider_id, draft: true, enabled: false });
    expect((await page(link.secret, 'POST', '/activate')).body.code).toBe('sso_setup_test_required');
    await passTest(link, 'bob@draft.lifecycle.test');
    expect((await page(link.secret, 'POST', '/activate')).status).toBe(200);
    expect((await listed(link)).state).toBe('used');
  });

  it('revoking ends the link and deletes its draft; revoking a used link leaves its live provider alone', async () => {
    const link = await makeLink(['rev.lifecycle.test']);
    await saveDraft(link);
    const revoked = await svc.api(owner.ownerToken, 'DELETE', `${links()}/${link.id}`);
    expect([revoked.status, revoked.body.state, revoked.body.used_at]).toEqual([200, 'revoked', null]);
    expect((await svc.ctx.db.query('select 1 from sso_providers where id = $1', [link.provider_id])).rowCount).toBe(0);
    await goneEverywhere(link, 'revoked');

    const used = await makeLink(['rev2.lifecycle.test']);
    await saveDraft(used);
    await passTest(used, 'cy@rev2.lifecycle.test');
    expect((await page(used.secret, 'POST', '/activate')).status).toBe(200);
    const r = await svc.api(owner.ownerToken, 'DELETE', `${links()}/${used.id}`);
    expect([r.status, r.body.state]).toEqual([200, 'revoked']);
    expect(r.body.used_at).toEqual(expect.any(String));
    expect((await svc.api(owner.ownerToken, 'GET', providerPath(used.provider_id))).body).toMatchObject({ enabled: true, draft: false });
    await goneEverywhere(used, 'revoked');
  });
});

describe('migration 101: backfill and trigger', () => {
  const name = uniqueName('mig101_');
  let pool: ReturnType<typeof createPool>;
  beforeAll(async () => {
    pool = createPool(await createDatabase(name));
  });
  afterAll(async () => {
    await pool?.end();
    await dropDatabase(name);
  });

  it('marks links already used under the old rule, and links whose provider was enabled and then deleted', async () => {
    const all = readMigrations();
    await migrate(pool, all.filter((f) => f.id < 101));
    const ref = 'mig-101';
    await pool.query("insert into owners (id, email) values ('00000000-0000-4000-8000-0000000000aa', 'o@mig.test')");
    await pool.query(
      `insert into projects (ref, owner_id, plan, database_url_enc, anon_key, jwt_kid, jwt_private_jwk_enc, jwt_public_jwk)
       values ($1, '00000000-0000-4000-8000-0000000000aa', 'enterprise', '\\x00', 'anon_mig', 'k', '\\x00', '{}')`,
      [ref],
    );
    const ids = {
      activated: '00000000-0000-4000-8000-000000000001',
      ownerEnabled: '00000000-0000-4000-8000-000000000002',
      enabledThenDeleted: '00000000-0000-4000-8000-000000000003',
      draft: '00000000-0000-4000-8000-000000000004',
      none: '00000000-0000-4000-8000-000000000005',
      draftDeleted: '00000000-0000-4000-8000-000000000006',
    };
    const provider = (id: string, enabled: boolean, draft: boolean) =>
      pool.query("insert into sso_providers (id, project_ref, kind, name, enabled, draft) values ($1, $2, 'saml', 'p', $3, $4)", [id, ref, enabled, draft]);
    await provider(ids.activated, true, false);
    await provider(ids.ownerEnabled, true, false);
    await provider(ids.draft, false, true);
    let n = 0;
    for (const [key, providerId] of Object.entries(ids)) {
      await pool.query(
        `insert into sso_setup_links (id, project_ref, secret_hash, kind, domains, provider_id, expires_at, activated_at)
         values ($1, $2, $3, 'saml', '{x.test}', $4, now() + interval '1 day', $5)`,
        [`00000000-0000-4000-8000-0000000001${String(++n).padStart(2, '0')}`, ref, Buffer.from(key), providerId, key === 'activated' ? new Date('2030-01-01T00:00:00Z') : null],
      );
    }
    // the owner once enabled the provider behind `enabledThenDeleted`, then deleted it; the one
    // behind `draftDeleted` was only ever changed and deleted as a draft
    const audit = (providerId: string, action: string, details: object) =>
      pool.query("insert into audit_log (project_ref, action, resource_type, resource_id, details) values ($1, $2, 'sso_provider', $3, $4)", [ref, action, providerId, details]);
    await audit(ids.enabledThenDeleted, 'sso_provider.update', { fields: ['enabled'], enabled: true });
    await audit(ids.enabledThenDeleted, 'sso_provider.delete', {});
    await audit(ids.draftDeleted, 'sso_provider.update', { fields: ['name'], name: 'n' });
    await audit(ids.draftDeleted, 'sso_provider.update', { fields: ['enabled'], enabled: false });

    await migrate(pool, all);
    const rows = (await pool.query('select provider_id, activated_at, used_at from sso_setup_links order by id')).rows;
    const usedOf = (providerId: string) => rows.find((r) => r.provider_id === providerId)!.used_at;
    expect(usedOf(ids.activated)).toEqual(new Date('2030-01-01T00:00:00Z'));
    expect(usedOf(ids.ownerEnabled)).toBeInstanceOf(Date);
    expect(usedOf(ids.enabledThenDeleted)).toBeInstanceOf(Date);
    expect(usedOf(ids.draft)).toBeNull();
    expect(usedOf(ids.none)).toBeNull();
    expect(usedOf(ids.draftDeleted)).toBeNull();

    // from now on the trigger marks it
    await pool.query('update sso_providers set enabled = true, draft = false where id = $1', [ids.draft]);
    expect((await pool.query('select used_at from sso_setup_links where provider_id = $1', [ids.draft])).rows[0].used_at).toBeInstanceOf(Date);
  });
});
