// SSO setup links through the real service, without a browser: the owner's Management API, the
// setup page's API (the link's secret as the bearer), the test sign-in against the suite's SAML IdP
// (test/helpers/saml-idp.ts) and a real oidc-provider, activation and the owner's email (a real
// SMTP server as the platform default). The browser side is dashboard-sso-setup.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oidcCallbackUrl } from '../../src/sso/oidc/settings.js';
import { eventually, sql } from '../helpers/env.js';
import { startOidcIdp, type OidcIdp } from '../helpers/oidc-idp.js';
import { postToAcs, readAuthnRequest, TestIdp, testKeys } from '../helpers/saml-idp.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp-server.js';

let svc: TestService;
let smtp: TestSmtpServer;
let owner: TestProject;
const idp = new TestIdp({ entityId: 'https://idp.acme.test/saml' });

beforeAll(async () => {
  smtp = await startSmtpServer();
  svc = await startTestService({ env: { SMTP_URL: smtp.url, SMTP_FROM: 'Platform <no-reply@platform.test>' } });
  owner = await svc.project('enterprise');
});

afterAll(async () => {
  await svc?.stop();
  await smtp?.close();
});

const links = (p: TestProject = owner) => `/v1/projects/${p.ref}/auth/sso/setup-links`;
const makeLink = async (body: Record<string, unknown>, p: TestProject = owner) => {
  const r = await svc.api(p.ownerToken, 'POST', links(p), body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { ...r.body, secret: new URL(r.body.url).hash.slice(1) } as { id: string; url: string; secret: string; provider_id: string; expires_at: string; state: string };
};
/** The setup page's API, as the page calls it. */
const page = async (secret: string, method: string, path: string, body?: unknown) => {
  const headers: Record<string, string> = { authorization: `Bearer ${secret}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${svc.url}/v1/sso-setup${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
};
/** Starts a test sign-in and answers it as the IdP would; returns the result the page reads. */
const samlTest = async (secret: string, answer: (req: ReturnType<typeof readAuthnRequest>) => Record<string, unknown>) => {
  const started = await page(secret, 'POST', '/test');
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const req = readAuthnRequest(started.body.url);
  const info = await page(secret, 'GET', '');
  const sp = { entityId: info.body.saml.sp_entity_id, acsUrl: info.body.saml.acs_url };
  const back = await postToAcs(req.acsUrl, { SAMLResponse: idp.signedResponse({ sp, requestId: req.id, ...answer(req) } as never), RelayState: req.relayState! });
  expect(back.origin + back.pathname).toBe(`${svc.url}/dashboard/sso-setup.html`);
  const result = await page(secret, 'GET', `/tests/${back.searchParams.get('test')}`);
  expect(result.status).toBe(200);
  return result.body;
};

describe('SSO setup links', () => {
  it('creates a link shown once, stores only a hash, lists it without the secret, and keeps draft providers out of sign-in', async () => {
    const link = await makeLink({ domains: ['Acme.test'], kind: 'saml' });
    expect(link.url).toMatch(new RegExp(`^${svc.url}/dashboard/sso-setup\\.html#ssl_[A-Za-z0-9_-]{43}$`));
    expect(Buffer.from(link.secret.slice(4), 'base64url').length * 8).toBeGreaterThanOrEqual(128);
    expect(new Date(link.expires_at).getTime() - Date.now()).toBeGreaterThan(6.9 * 86_400_000);
    expect(new Date(link.expires_at).getTime() - Date.now()).toBeLessThan(7.1 * 86_400_000);
    const listed = await svc.api(owner.ownerToken, 'GET', links());
    expect(listed.body.items).toEqual([expect.objectContaining({ id: link.id, kind: 'saml', domains: ['acme.test'], state: 'active' })]);
    expect(JSON.stringify(listed.body)).not.toContain(link.secret);
    const dump = await svc.ctx.db.query("select row_to_json(l)::text as j from sso_setup_links l");
    expect(dump.rows.map((r) => r.j).join()).not.toContain(link.secret.slice(4));
    // more than 30 days, and another owner, are refused
    expect((await svc.api(owner.ownerToken, 'POST', links(), { domains: ['x.test'], expires_in_days: 31 })).status).toBe(400);
    const other = await svc.project('enterprise');
    expect((await svc.api(other.ownerToken, 'GET', links(owner))).status).toBe(404);
    const free = await svc.project('free');
    expect((await svc.api(free.ownerToken, 'POST', links(free), { domains: ['x.test'] })).body.code).toBe('feature_not_in_plan');

    // the page: what to enter at the IdP; our SP metadata exists before the provider does
    const info = await page(link.secret, 'GET', '');
    expect(info.status).toBe(200);
    expect(info.headers.get('cache-control')).toBe('no-store');
    expect(info.body.saml).toMatchObject({ acs_url: `${owner.projectUrl}/auth/v1/sso/saml/acs/${link.provider_id}`, nameid_format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress' });
    expect(info.body.oidc).toBeNull();
    const md = await fetch(info.body.saml.sp_metadata_url);
    expect(md.status).toBe(200);
    expect(await md.text()).toContain(info.body.saml.acs_url);

    // saving: only SAML, never the domains, and the draft is not routed to
    expect((await page(link.secret, 'PUT', '/provider', { kind: 'oidc', issuer: 'https://x.test', client_id: 'a', client_secret: 'b' })).status).toBe(400);
    const withDomains = await page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: idp.metadataXml(), domains: ['evil.test'] });
    expect([withDomains.status, withDomains.body.code]).toEqual([400, 'validation_failed']);
    const saved = await page(link.secret, 'PUT', '/provider', { kind: 'saml', name: 'Acme SAML', metadata_xml: idp.metadataXml() });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect(saved.body).toMatchObject({ id: link.provider_id, enabled: false, draft: true, domains: ['acme.test'], idp_entity_id: idp.entityId });
    const start = await fetch(`${owner.projectUrl}/auth/v1/sso`, {
      method: 'POST',
      headers: { apikey: owner.anonKey, 'content-type': 'application/json' },
      body: JSON.stringify({ domain: 'acme.test', skip_http_redirect: true, code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }),
    });
    expect([start.status, (await start.json()).code]).toEqual([404, 'sso_provider_not_found']);
    expect((await page(link.secret, 'POST', '/activate')).body.code).toBe('sso_setup_test_required');
  });

  it('explains failed test sign-ins (audience, recipient, clock, signature, domain), activates after a passing one, and emails the owner', async () => {
    const link = await makeLink({ domains: ['corp.test'] });
    await page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: idp.metadataXml() });

    const audience = await samlTest(link.secret, () => ({ nameId: 'ann@corp.test', audience: 'https://someone-else.test/sp' }));
    expect(audience).toMatchObject({ ok: false, problem: { check: 'audience' } });
    expect(audience.problem.fix).toContain(`/sso/saml/metadata/${link.provider_id}`);
    expect((await samlTest(link.secret, () => ({ nameId: 'ann@corp.test', recipient: 'https://wrong.test/acs' }))).problem.check).toBe('recipient');
    const clock = await samlTest(link.secret, () => ({ nameId: 'ann@corp.test', timeShiftMs: -3_600_000 }));
    expect(clock.problem).toMatchObject({ check: 'clock' });
    expect(clock.problem.fix).toMatch(/clock/);
    expect((await samlTest(link.secret, () => ({ nameId: 'ann@corp.test', signWith: testKeys.attacker }))).problem.check).toBe('signature');
    const domain = await samlTest(link.secret, () => ({ nameId: 'eve@elsewhere.test' }));
    expect(domain).toMatchObject({ ok: false, problem: { check: 'domain' }, email: 'eve@elsewhere.test' });
    expect(domain.problem.title).toContain('elsewhere.test');
    expect((await page(link.secret, 'POST', '/activate')).body.code).toBe('sso_setup_test_required');

    const ok = await samlTest(link.secret, () => ({ nameId: 'ann@corp.test', attributes: { givenName: ['Ann'], surname: ['Lee'], department: ['R&D'] } }));
    expect(ok).toMatchObject({ ok: true, subject: 'ann@corp.test', email: 'ann@corp.test', first_name: 'Ann', last_name: 'Lee', name: 'Ann Lee', current: true });
    expect(ok.attributes.department).toEqual(['R&D']);
    // a change after the test needs a new test
    await page(link.secret, 'PUT', '/provider', { kind: 'saml', attribute_mapping: { extra: { department: 'department' } } });
    expect((await page(link.secret, 'POST', '/activate')).body.code).toBe('sso_setup_test_required');
    const again = await samlTest(link.secret, () => ({ nameId: 'ann@corp.test', attributes: { department: ['R&D'] } }));
    expect(again.extra).toEqual({ department: 'R&D' });

    const activated = await page(link.secret, 'POST', '/activate');
    expect(activated.status, JSON.stringify(activated.body)).toBe(200);
    expect(activated.body).toMatchObject({ provider: { enabled: true, draft: false, domains: ['corp.test'] }, owner_notified: true });
    const mail = await eventually(async () => smtp.received.find((m) => m.to.includes(`${owner.ref}@owners.test`) && /corp\.test/.test(m.subject ?? '')), 10_000, 'owner notice');
    expect(mail.subject).toBe('SSO provider activated for corp.test');
    expect(mail.text).toContain(link.id);
    expect(mail.text).not.toContain(link.secret);

    // the link is used up; the provider is live for real sign-ins
    const used = await page(link.secret, 'GET', '');
    expect([used.status, used.body.code, used.body.details]).toEqual([410, 'sso_setup_link_gone', { state: 'used' }]);
    expect((await page(link.secret, 'POST', '/activate')).status).toBe(410);
    const listed = await svc.api(owner.ownerToken, 'GET', links());
    expect(listed.body.items.find((l: { id: string }) => l.id === link.id).state).toBe('used');

    // the audit trail names the link for every step, and never holds the secret
    const audit = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/audit?limit=100`);
    const mine = audit.body.filter((a: { details: { setup_link_id?: string } }) => a.details.setup_link_id === link.id);
    const actions = mine.map((a: { action: string }) => a.action);
    expect(actions).toEqual(expect.arrayContaining(['sso_setup_link.create', 'sso_provider.create', 'sso_provider.update', 'sso_setup_link.test', 'sso_setup_link.activate']));
    expect(mine.filter((a: { action: string }) => a.action === 'sso_setup_link.test').map((a: { details: { failed_check?: string } }) => a.details.failed_check)).toEqual(
      expect.arrayContaining(['audience', 'recipient', 'clock', 'signature', 'domain']),
    );
    expect(mine.find((a: { action: string }) => a.action === 'sso_setup_link.activate').actor.setup_link_id).toBe(link.id);
    expect(JSON.stringify(audit.body)).not.toContain(link.secret);
  });

  it('answers 404 for unknown links and 410 for expired and revoked ones; revoking deletes the unactivated draft', async () => {
    expect((await page('ssl_' + 'A'.repeat(43), 'GET', '')).body.code).toBe('sso_setup_link_not_found');
    expect((await page('not-a-link', 'GET', '')).status).toBe(404);
    expect((await fetch(`${svc.url}/v1/sso-setup`)).status).toBe(404);

    const expired = await makeLink({ domains: ['old.test'] });
    await svc.ctx.db.query("update sso_setup_links set expires_at = now() - interval '1 second' where id = $1", [expired.id]);
    const e = await page(expired.secret, 'GET', '');
    expect([e.status, e.body.details]).toEqual([410, { state: 'expired' }]);
    expect(e.body.message).toMatch(/expired/);

    const revoked = await makeLink({ domains: ['rev.test'] });
    expect((await page(revoked.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: idp.metadataXml() })).status).toBe(200);
    const del = await svc.api(owner.ownerToken, 'DELETE', `${links()}/${revoked.id}`);
    expect([del.status, del.body.state]).toEqual([200, 'revoked']);
    expect((await page(revoked.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: idp.metadataXml() })).body.details).toEqual({ state: 'revoked' });
    expect((await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/auth/providers/sso/${revoked.provider_id}`)).status).toBe(404);
    expect((await svc.api(owner.ownerToken, 'DELETE', `${links()}/00000000-0000-4000-8000-000000000000`)).body.code).toBe('sso_setup_link_not_found');
    // a domain another provider serves cannot get a link
    const taken = await svc.api(owner.ownerToken, 'POST', links(), { domains: ['corp.test'] });
    expect([taken.status, taken.body.code]).toEqual([409, 'sso_domain_taken']);
  });

  it('refuses cross-site form posts and cookies, and hostile metadata, and never echoes the secret', async () => {
    const link = await makeLink({ domains: ['csrf.test'] });
    const form = await fetch(`${svc.url}/v1/sso-setup/provider`, { method: 'PUT', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${link.secret}` }, body: 'kind=saml' });
    expect(form.status).toBe(415);
    // text/plain is what a cross-site form can send with a JSON-looking body: refused even with the bearer
    const plain = await fetch(`${svc.url}/v1/sso-setup/activate`, { method: 'POST', headers: { 'content-type': 'text/plain', authorization: `Bearer ${link.secret}` }, body: '{}' });
    expect([plain.status, (await plain.json()).code]).toEqual([415, 'unsupported_media_type']);
    const plainPut = await fetch(`${svc.url}/v1/sso-setup/provider`, { method: 'PUT', headers: { 'content-type': 'text/plain', authorization: `Bearer ${link.secret}` }, body: JSON.stringify({ kind: 'saml', metadata_xml: idp.metadataXml() }) });
    expect(plainPut.status).toBe(415);
    const cookie = await fetch(`${svc.url}/v1/sso-setup`, { headers: { cookie: `link=${link.secret}` } });
    expect(cookie.status).toBe(404);
    const doctype = await page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>' + idp.metadataXml().replace('<?xml version="1.0" encoding="UTF-8"?>', '') });
    expect([doctype.status, doctype.body.code]).toEqual([400, 'saml_metadata_invalid']);
    for (const r of [doctype, await page(link.secret, 'GET', '')]) expect(JSON.stringify(r.body)).not.toContain(link.secret);
  });
});

describe('SSO setup links: OIDC', () => {
  let oidc: OidcIdp;
  beforeAll(async () => {
    oidc = await startOidcIdp({ redirectUris: [] });
    oidc.setAccount('ann', { email: 'ann@oidc.test', email_verified: true, name: 'Ann' });
    oidc.setAccount('nomail', { name: 'No Mail' });
  });
  afterAll(async () => oidc?.stop());

  it('tests against a real oidc-provider: a cancelled and a mail-less sign-in are explained, a good one activates; the secret stays write-only', async () => {
    const link = await makeLink({ domains: ['oidc.test'], kind: 'oidc' });
    const info = await page(link.secret, 'GET', '');
    // the link's own provider id is in it: register it at the IdP as the admin would
    const redirectUri = oidcCallbackUrl(svc.ctx, { project_ref: owner.ref, id: link.provider_id });
    expect(redirectUri).toBe(`${owner.projectUrl}/auth/v1/sso/oidc/callback/${link.provider_id}`);
    expect(info.body).toMatchObject({ saml: null, oidc: { redirect_uri: redirectUri, scopes: ['openid', 'email', 'profile'] } });
    oidc.allowRedirect(redirectUri);
    const saved = await page(link.secret, 'PUT', '/provider', { kind: 'oidc', issuer: oidc.issuer, client_id: oidc.clientId, client_secret: oidc.clientSecret });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect(saved.body).toMatchObject({ draft: true, has_client_secret: true });
    expect(JSON.stringify(saved.body)).not.toContain(oidc.clientSecret);

    const run = async (sub: string, opts?: { cancel?: boolean }) => {
      const started = await page(link.secret, 'POST', '/test');
      const back = new URL(await oidc.login(started.body.url, sub, opts));
      const res = await fetch(back, { redirect: 'manual' });
      const to = new URL(res.headers.get('location')!);
      expect(to.pathname).toBe('/dashboard/sso-setup.html');
      return (await page(link.secret, 'GET', `/tests/${to.searchParams.get('test')}`)).body;
    };
    expect((await run('ann', { cancel: true })).problem.check).toBe('idp_refused');
    expect((await run('nomail')).problem.check).toBe('email_missing');
    // saving without the secret keeps it
    await page(link.secret, 'PUT', '/provider', { kind: 'oidc', name: 'Acme OIDC' });
    const ok = await run('ann');
    expect(ok).toMatchObject({ ok: true, subject: 'ann', email: 'ann@oidc.test', email_verified: true, name: 'Ann' });
    const activated = await page(link.secret, 'POST', '/activate');
    expect(activated.body.provider).toMatchObject({ name: 'Acme OIDC', enabled: true, draft: false });
    expect((await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/auth/users`)).body.total).toBe(0);
  });
});

describe('SSO setup links: rate limit', () => {
  it('limits calls of the setup API per client', async () => {
    const limited = await startTestService({ env: { SSO_SETUP_RATE_LIMIT: '3/1m' } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await fetch(`${limited.url}/v1/sso-setup`, { headers: { authorization: 'Bearer ssl_x' } })).status);
      expect(statuses).toEqual([404, 404, 404, 429, 429]);
    } finally {
      await limited.stop();
    }
  });
});
