// Managing SSO providers and users as the owner: discovery on save (unreachable issuer, issuer
// mismatch), the write-only sealed client secret, domain rules, enable/disable, the test endpoint,
// the plan rule, and the user operations that the sign-in rules depend on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { startOidcIdp, type OidcIdp } from '../helpers/oidc-idp.js';

describe('SSO provider and user management', () => {
  let svc: TestService;
  let project: TestProject;
  let idp: OidcIdp;
  const path = () => `/v1/projects/${project.ref}/auth/providers/sso`;
  const owner = (method: string, p: string, body?: unknown) => svc.api(project.ownerToken, method, p, body);
  const oidc = (extra: Record<string, unknown> = {}) => ({ kind: 'oidc', name: 'Corp', domains: ['corp.test'], issuer: idp.issuer, client_id: idp.clientId, client_secret: 'very-secret-value-123', ...extra });

  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.project('enterprise');
    idp = await startOidcIdp({ redirectUris: [`${project.projectUrl}/auth/v1/sso/oidc/callback`] });
  });
  afterAll(async () => {
    await idp?.stop();
    await svc?.stop();
  });

  it('creates an OIDC provider after discovery, never returning or storing the secret in clear', async () => {
    const r = await owner('POST', path(), oidc({ domains: ['Corp.test', 'corp.test', 'sub.CORP.test.'] }));
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(Object.keys(r.body)).toEqual(['id', 'kind', 'name', 'enabled', 'draft', 'domains', 'issuer', 'client_id', 'scopes', 'attribute_mapping', 'trust_email', 'jit', 'callback_url', 'created_at', 'updated_at']);
    expect(r.body).toMatchObject({ kind: 'oidc', enabled: true, domains: ['corp.test', 'sub.corp.test'], scopes: ['openid', 'email', 'profile'], jit: true, trust_email: false, callback_url: `${project.projectUrl}/auth/v1/sso/oidc/callback/${r.body.id}` });
    expect(JSON.stringify(r.body)).not.toContain('very-secret-value-123');
    const row = await svc.ctx.db.query('select * from sso_providers where id = $1', [r.body.id]);
    expect(JSON.stringify(row.rows[0])).not.toContain('very-secret-value-123');
    expect(JSON.stringify((await owner('GET', path())).body)).not.toContain('very-secret-value-123');
    await owner('DELETE', `${path()}/${r.body.id}`);
  });

  it('refuses an unreachable issuer with oidc_discovery_failed', async () => {
    const r = await owner('POST', path(), oidc({ issuer: `http://127.0.0.1:${await freePort()}` }));
    expect([r.status, r.body.code]).toEqual([400, 'oidc_discovery_failed']);
  });

  it('refuses an issuer that names itself differently with oidc_issuer_mismatch', async () => {
    const liar = await startOidcIdp({ redirectUris: ['http://unused.test/cb'], advertisedIssuer: 'https://login.other.test' });
    try {
      const r = await owner('POST', path(), oidc({ issuer: liar.url }));
      expect([r.status, r.body.code]).toEqual([400, 'oidc_issuer_mismatch']);
      expect(r.body.message).toContain('https://login.other.test');
    } finally {
      await liar.stop();
    }
  });

  it('validates fields: domains, kind-specific fields, unknown fields, required fields', async () => {
    for (const body of [
      oidc({ domains: ['not a domain'] }),
      oidc({ domains: ['10.0.0.1'] }),
      oidc({ domains: [] }),
      oidc({ metadata_url: 'https://idp.test/metadata' }),
      oidc({ surprise: true }),
      oidc({ client_secret: undefined }),
      oidc({ issuer: 'ftp://idp.test' }),
    ]) {
      const r = await owner('POST', path(), body);
      expect([r.status, r.body.code], JSON.stringify(body)).toEqual([400, 'validation_failed']);
    }
  });

  it('keeps domains unique across the providers of a project (409 sso_domain_taken)', async () => {
    const a = await owner('POST', path(), oidc({ domains: ['one.test'] }));
    expect(a.status).toBe(201);
    const b = await owner('POST', path(), oidc({ domains: ['two.test', 'ONE.test'] }));
    expect([b.status, b.body.code]).toEqual([409, 'sso_domain_taken']);
    const c = await owner('POST', path(), oidc({ domains: ['two.test'] }));
    const taken = await owner('PATCH', `${path()}/${c.body.id}`, { domains: ['one.test'] });
    expect([taken.status, taken.body.code]).toEqual([409, 'sso_domain_taken']);
    // another project may bind the same domain
    const other = await svc.project('enterprise');
    const elsewhere = await svc.api(other.ownerToken, 'POST', `/v1/projects/${other.ref}/auth/providers/sso`, oidc({ domains: ['one.test'] }));
    expect(elsewhere.status).toBe(201);
  });

  it('updates, disables, tests and deletes a provider', async () => {
    const { body: p } = await owner('POST', path(), oidc({ domains: ['life.test'] }));
    const patched = await owner('PATCH', `${path()}/${p.id}`, { enabled: false, name: 'Renamed', scopes: ['email'], domains: ['life.test', 'cycle.test'], attribute_mapping: { name: 'nickname' } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({ enabled: false, name: 'Renamed', scopes: ['openid', 'email'], domains: ['cycle.test', 'life.test'], attribute_mapping: { name: 'nickname' } });
    expect((await owner('GET', `${path()}/${p.id}`)).body.enabled).toBe(false);

    const test = await owner('POST', `/v1/projects/${project.ref}/auth/providers/${p.id}/test`);
    expect(test.status).toBe(200);
    expect(test.body).toMatchObject({ ok: true, issuer: idp.issuer, token_endpoint: expect.stringContaining(idp.url), problem: null });
    expect((await owner('GET', `${path()}/${p.id}`)).body.updated_at).toBe(patched.body.updated_at);

    const gone = await owner('DELETE', `${path()}/${p.id}`);
    expect(gone.status).toBe(200);
    expect((await owner('GET', `${path()}/${p.id}`)).body.code).toBe('sso_provider_not_found');
  });

  it('reports a problem from the test endpoint when the IdP is down, changing nothing', async () => {
    const down = await startOidcIdp({ redirectUris: ['http://unused.test/cb'] });
    const { body: p } = await owner('POST', path(), oidc({ domains: ['down.test'], issuer: down.issuer }));
    await down.stop();
    const test = await owner('POST', `/v1/projects/${project.ref}/auth/providers/${p.id}/test`);
    expect(test.body).toMatchObject({ ok: false, problem: { code: 'oidc_discovery_failed' } });
    expect((await owner('GET', `${path()}/${p.id}`)).body).toEqual(p);
  });

  it('refuses projects whose plan lacks SSO with 402, and other owners with 404', async () => {
    const free = await svc.project('pro');
    const r = await svc.api(free.ownerToken, 'POST', `/v1/projects/${free.ref}/auth/providers/sso`, oidc());
    expect([r.status, r.body.code]).toEqual([402, 'feature_not_in_plan']);
    // the plan is checked before the body, as everywhere in the Management API
    expect((await svc.api(free.ownerToken, 'POST', `/v1/projects/${free.ref}/auth/providers/sso`, { nonsense: 1 })).status).toBe(402);
    expect((await svc.api(free.ownerToken, 'GET', path())).body.code).toBe('project_not_found');
    expect((await svc.api(null, 'GET', path())).status).toBe(401);
  });

  it('refuses user and provider text Postgres cannot store (NUL, unpaired surrogates) with 400, not 500', async () => {
    const users = `/v1/projects/${project.ref}/auth/users`;
    for (const body of [
      { email: 'nul\u0000@corp.test' },
      { email: 'meta@corp.test', user_metadata: { team: 'a\u0000b' } },
      { email: 'meta@corp.test', app_metadata: { nested: [{ ['k\u0000']: 1 }] } },
      { email: 'meta@corp.test', user_metadata: { team: 'half \ud800 pair' } },
    ]) {
      const r = await owner('POST', users, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe('validation_failed');
    }
    const p = await owner('POST', `/v1/projects/${project.ref}/auth/providers/sso`, { kind: 'saml', name: 'x\u0000', domains: ['nul.test'], metadata_xml: '<x/>' });
    expect(p.status).toBe(400);
    expect(p.body.code).toBe('validation_failed');
  });

  it('manages users: create verified or not, refuse duplicates, ban, unban, delete', async () => {
    const users = `/v1/projects/${project.ref}/auth/users`;
    const a = await owner('POST', users, { email: 'Ann@Corp.test', email_confirm: true });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ email: 'ann@corp.test', banned_until: null, identities: [] });
    expect(a.body.email_confirmed_at).toBeTruthy();
    const b = await owner('POST', users, { email: 'bob@corp.test' });
    expect(b.body.email_confirmed_at).toBeUndefined();
    expect((await owner('POST', users, { email: 'ANN@corp.test' })).body.code).toBe('user_exists');
    expect((await owner('POST', users, { email: 'not-an-email' })).body.code).toBe('validation_failed');

    const banned = await owner('PATCH', `${users}/${b.body.id}`, { ban_duration: '24h' });
    expect(new Date(banned.body.banned_until).getTime()).toBeGreaterThan(Date.now());
    expect((await owner('PATCH', `${users}/${b.body.id}`, { ban_duration: 'none' })).body.banned_until).toBeNull();
    expect((await owner('PATCH', `${users}/${b.body.id}`, { ban_duration: 'forever' })).body.code).toBe('validation_failed');

    const list = await owner('GET', `${users}?per_page=1&page=2`);
    expect(list.body).toMatchObject({ total: 2, page: 2, per_page: 1 });
    expect(list.body.users.map((u: { email: string }) => u.email)).toEqual(['bob@corp.test']);
    expect((await owner('DELETE', `${users}/${b.body.id}`)).status).toBe(204);
    expect((await owner('GET', `${users}/${b.body.id}`)).body.code).toBe('user_not_found');
    expect((await owner('DELETE', `${users}/${b.body.id}`)).body.code).toBe('user_not_found');
    for (const id of ['-'.repeat(36), 'x', '00000000-0000-4000-8000-00000000000g']) {
      expect((await owner('GET', `${users}/${id}`)).status).toBe(404);
      expect((await owner('PATCH', `${users}/${id}`, { ban_duration: 'none' })).status).toBe(404);
      expect((await owner('GET', `${path()}/${id}`)).status).toBe(404);
    }
  });
});
