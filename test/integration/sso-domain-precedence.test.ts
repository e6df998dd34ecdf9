// The most specific domain wins for assertions as it does for routing (docs/sso.md, "Rules and choices"), through
// the real service: a provider of acme.test cannot create or link a user of eu.acme.test while
// another enabled provider serves eu.acme.test (OIDC against real oidc-provider IdPs, SAML against
// the suite's signing IdP); a setup link's test sign-in applies the same rule with its draft counted
// as live; the takeover warnings are re-checked when users actually move (the link's activation,
// with the owner's email, and the owner enabling a provider); and a test sign-in's answer to the
// link holder carries no network detail about the IdP's endpoints.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDP_REQUEST_FAILED } from '../../src/sso/setup/explain.js';
import { eventually } from '../helpers/env.js';
import { signInThrough, startOidcIdp, startSignIn, exchangeCode, type OidcIdp } from '../helpers/oidc-idp.js';
import { postToAcs, readAuthnRequest, TestIdp } from '../helpers/saml-idp.js';
import { freePort, startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp-server.js';

let svc: TestService;
let smtp: TestSmtpServer;

beforeAll(async () => {
  smtp = await startSmtpServer();
  // 127.0.0.1 only (where the suite's IdPs listen): 127.0.0.2 plays an internal host
  svc = await startTestService({
    env: { SMTP_URL: smtp.url, SMTP_FROM: 'Platform <no-reply@platform.test>', OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128', AUTH_RATE_LIMIT_SSO: 'off', SSO_SETUP_RATE_LIMIT: 'off' },
  });
});
afterAll(async () => {
  await svc?.stop();
  await smtp?.close();
});

const app = 'http://app.test';
const providersOf = (p: TestProject) => `/v1/projects/${p.ref}/auth/providers/sso`;
const usersAndIdentities = async (p: TestProject, email: string) =>
  (
    await svc.ctx.db.query(
      `select (select count(*) from users where project_ref = $1 and lower(email) = $2)::int as users,
              (select count(*) from identities where project_ref = $1 and lower(email) = $2)::int as identities`,
      [p.ref, email],
    )
  ).rows[0] as { users: number; identities: number };

/** The setup page's API with a link's secret. */
const page = async (secret: string, method: string, path: string, body?: unknown) => {
  const headers: Record<string, string> = { authorization: `Bearer ${secret}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${svc.url}/v1/sso-setup${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};
const makeLink = async (p: TestProject, body: Record<string, unknown>) => {
  const r = await svc.api(p.ownerToken, 'POST', `/v1/projects/${p.ref}/auth/sso/setup-links`, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { ...r.body, secret: new URL(r.body.url).hash.slice(1) } as { id: string; secret: string; provider_id: string; warnings: Record<string, string>[] };
};
/** A SAML test sign-in through a link, answered by `idp` as `email`; returns what the page reads. */
const samlTest = async (idp: TestIdp, secret: string, email: string) => {
  const started = await page(secret, 'POST', '/test');
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const req = readAuthnRequest(started.body.url);
  const back = await postToAcs(req.acsUrl, { SAMLResponse: idp.signedResponse({ sp: { entityId: req.issuer, acsUrl: req.acsUrl }, requestId: req.id, nameId: email }), RelayState: req.relayState! });
  const result = await page(secret, 'GET', `/tests/${back.searchParams.get('test')}`);
  expect(result.status).toBe(200);
  return result.body;
};

describe('OIDC: a parent provider cannot assert a subdomain another provider serves', () => {
  let project: TestProject;
  let acme: OidcIdp;
  let eu: OidcIdp;
  let acmeProvider: string;
  let euProvider: string;

  beforeAll(async () => {
    project = await svc.project('enterprise', { siteUrl: app });
    const callback = [`${project.projectUrl}/auth/v1/sso/oidc/callback`];
    [acme, eu] = await Promise.all([startOidcIdp({ redirectUris: callback }), startOidcIdp({ redirectUris: callback })]);
    const add = async (idp: OidcIdp, domain: string) => {
      const r = await svc.api(project.ownerToken, 'POST', providersOf(project), { kind: 'oidc', name: `IdP of ${domain}`, domains: [domain], issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      idp.allowRedirect(r.body.callback_url);
      return r.body.id as string;
    };
    acmeProvider = await add(acme, 'acme.test');
    euProvider = await add(eu, 'eu.acme.test');
    // linking on: the takeover the rule must stop
    expect((await svc.api(project.ownerToken, 'PATCH', `/v1/projects/${project.ref}`, { allow_linking: true })).status).toBe(200);
  });
  afterAll(async () => {
    await Promise.all([acme?.stop(), eu?.stop()]);
  });

  const signIn = async (idp: OidcIdp, sub: string, email: string, selector: Record<string, string>) => {
    idp.setAccount(sub, { email, email_verified: true });
    const r = await signInThrough(idp, project, sub, selector);
    return { ...r, description: r.landed.searchParams.get('error_description') };
  };

  it('refuses alice@eu.acme.test from the acme.test IdP (email_domain_other_provider), creating no user or identity', async () => {
    for (const selector of [{ provider_id: acmeProvider }, { domain: 'acme.test' }] as Record<string, string>[]) {
      const r = await signIn(acme, 'alice-parent', 'alice@eu.acme.test', selector);
      expect([r.error, r.code]).toEqual(['email_domain_other_provider', null]);
      expect(r.description).toContain('eu.acme.test');
      // deeper subdomains of eu.acme.test are eu's too
      expect((await signIn(acme, 'alice-deep', 'alice@sales.eu.acme.test', selector)).error).toBe('email_domain_other_provider');
    }
    expect(await usersAndIdentities(project, 'alice@eu.acme.test')).toEqual({ users: 0, identities: 0 });
    expect(await usersAndIdentities(project, 'alice@sales.eu.acme.test')).toEqual({ users: 0, identities: 0 });
  });

  it('does not link an existing eu.acme.test user to the parent IdP even with linking on and a verified email; the eu IdP still signs them in', async () => {
    const local = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/users`, { email: 'bob@eu.acme.test', email_confirm: true });
    expect(local.status).toBe(201);
    expect((await signIn(acme, 'bob-parent', 'bob@eu.acme.test', { provider_id: acmeProvider })).error).toBe('email_domain_other_provider');
    const idents = await svc.ctx.db.query('select provider_id from identities where user_id = $1', [local.body.id]);
    expect(idents.rows).toEqual([]);

    // the provider domain routing chooses: links the user (linking on, verified on both sides)
    const viaEu = await signIn(eu, 'bob-eu', 'bob@eu.acme.test', { domain: 'eu.acme.test' });
    expect(viaEu.error).toBeNull();
    const s = await exchangeCode(project, viaEu.code!, viaEu.verifier);
    expect(s.status).toBe(200);
    expect(s.body.user).toMatchObject({ id: local.body.id, app_metadata: { providers: expect.arrayContaining([`sso:${euProvider}`]) } });
    // and creates new eu users just in time
    const carol = await signIn(eu, 'carol-eu', 'carol@eu.acme.test', { email: 'carol@eu.acme.test' });
    expect((await exchangeCode(project, carol.code!, carol.verifier)).body.user.email).toBe('carol@eu.acme.test');
  });

  it('the parent keeps its own domain and the subdomains nobody else serves; with eu disabled, routing and the rule give eu.acme.test back to it', async () => {
    expect((await signIn(acme, 'dan-parent', 'dan@acme.test', { domain: 'acme.test' })).code).toBeTruthy();
    expect((await signIn(acme, 'erin-parent', 'erin@us.acme.test', { domain: 'us.acme.test' })).code).toBeTruthy();
    // the child's IdP cannot assert the parent's users either (outside its domains)
    expect((await signIn(eu, 'dan-eu', 'dan@acme.test', { provider_id: euProvider })).error).toBe('email_domain_not_allowed');

    expect((await svc.api(project.ownerToken, 'PATCH', `${providersOf(project)}/${euProvider}`, { enabled: false })).status).toBe(200);
    try {
      const fallback = await signIn(acme, 'fay-parent', 'fay@eu.acme.test', { domain: 'eu.acme.test' });
      expect([fallback.error, !!fallback.code]).toEqual([null, true]);
    } finally {
      const back = await svc.api(project.ownerToken, 'PATCH', `${providersOf(project)}/${euProvider}`, { enabled: true });
      // enabling it again moves the eu.acme.test users back: the answer says so
      expect(back.body.warnings).toEqual([expect.objectContaining({ code: 'takes_over_subdomain', domain: 'eu.acme.test', provider_id: acmeProvider, provider_domain: 'acme.test' })]);
    }
    expect((await signIn(acme, 'gus-parent', 'gus@eu.acme.test', { domain: 'acme.test' })).error).toBe('email_domain_other_provider');
  });
});

describe('SAML: the same rule', () => {
  it('refuses bob@eu.corp.test from the corp.test IdP while the eu.corp.test IdP signs him in', async () => {
    const project = await svc.project('enterprise', { siteUrl: app });
    const corpIdp = new TestIdp({ entityId: 'https://idp.corp.test/saml' });
    const euIdp = new TestIdp({ entityId: 'https://idp.eu.corp.test/saml' });
    const add = async (idp: TestIdp, domain: string) => {
      const r = await svc.api(project.ownerToken, 'POST', providersOf(project), { kind: 'saml', name: `SAML of ${domain}`, domains: [domain], metadata_xml: idp.metadataXml() });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body as { id: string; warnings?: unknown[] };
    };
    const corp = await add(corpIdp, 'corp.test');
    expect(corp.warnings).toBeUndefined(); // nobody moved
    const euP = await add(euIdp, 'eu.corp.test');
    // creating an enabled provider for a subdomain of a live one moves its users: said at once
    expect(euP.warnings).toEqual([expect.objectContaining({ domain: 'eu.corp.test', provider_id: corp.id, provider_domain: 'corp.test' })]);

    const signIn = async (idp: TestIdp, selector: Record<string, string>, email: string) => {
      const started = await startSignIn(project, selector);
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      const req = readAuthnRequest(started.url!);
      const landed = await postToAcs(req.acsUrl, { SAMLResponse: idp.signedResponse({ sp: { entityId: req.issuer, acsUrl: req.acsUrl }, requestId: req.id, nameId: email, attributes: { email: [email] } }), RelayState: req.relayState! });
      return { error: landed.searchParams.get('error'), code: landed.searchParams.get('code'), verifier: started.verifier };
    };
    expect(await signIn(corpIdp, { provider_id: corp.id }, 'bob@eu.corp.test')).toMatchObject({ error: 'email_domain_other_provider', code: null });
    expect(await usersAndIdentities(project, 'bob@eu.corp.test')).toEqual({ users: 0, identities: 0 });
    const ok = await signIn(euIdp, { email: 'bob@eu.corp.test' }, 'bob@eu.corp.test');
    expect(ok.error).toBeNull();
    expect((await exchangeCode(project, ok.code!, ok.verifier)).body.user.email).toBe('bob@eu.corp.test');
    expect((await signIn(corpIdp, { email: 'ann@corp.test' }, 'ann@corp.test')).code).toBeTruthy();
  });
});

describe('setup links: the rule in test sign-ins, and the warnings at activation', () => {
  it("a draft's test sign-in is refused in plain words for a subdomain another enabled provider serves, and passes for its own users", async () => {
    const project = await svc.project('enterprise');
    const childIdp = new TestIdp({ entityId: 'https://idp.eu.linkco.test/saml' });
    const child = await svc.api(project.ownerToken, 'POST', providersOf(project), { kind: 'saml', name: 'EU', domains: ['eu.linkco.test'], metadata_xml: childIdp.metadataXml() });
    expect(child.status).toBe(201);
    // a link for the parent moves nobody
    const link = await makeLink(project, { domains: ['linkco.test'], kind: 'saml' });
    expect(link.warnings).toEqual([]);
    const holderIdp = new TestIdp({ entityId: 'https://idp.linkco.test/saml' });
    expect((await page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: holderIdp.metadataXml() })).status).toBe(200);

    const refused = await samlTest(holderIdp, link.secret, 'alice@eu.linkco.test');
    expect(refused).toMatchObject({ ok: false, email: 'alice@eu.linkco.test', problem: { check: 'domain_other_provider' } });
    expect(refused.problem.title).toContain('eu.linkco.test');
    expect(refused.problem.title).toMatch(/another SSO provider/);
    expect(refused.problem.fix).toContain('linkco.test');
    expect((await page(link.secret, 'POST', '/activate')).body.code).toBe('sso_setup_test_required');

    const ok = await samlTest(holderIdp, link.secret, 'alice@linkco.test');
    expect(ok).toMatchObject({ ok: true, email: 'alice@linkco.test' });
    // a subdomain nobody else serves is the draft's too
    expect(await samlTest(holderIdp, link.secret, 'bo@us.linkco.test')).toMatchObject({ ok: true });
    const activated = await page(link.secret, 'POST', '/activate');
    expect([activated.status, activated.body.warnings]).toEqual([200, []]);
    // live now: the same rule in a real sign-in
    const started = await startSignIn(project, { provider_id: link.provider_id });
    const req = readAuthnRequest(started.url!);
    const landed = await postToAcs(req.acsUrl, { SAMLResponse: holderIdp.signedResponse({ sp: { entityId: req.issuer, acsUrl: req.acsUrl }, requestId: req.id, nameId: 'alice@eu.linkco.test' }), RelayState: req.relayState! });
    expect(landed.searchParams.get('error')).toBe('email_domain_other_provider');
  });

  it('counts the draft as live: a link for a subdomain of a live provider passes for its users, and its activation answers and emails who moved, re-checked at that moment', async () => {
    const project = await svc.project('enterprise');
    // no live parent when the link is made: no warning then
    const link = await makeLink(project, { domains: ['eu.late.test'], kind: 'saml' });
    expect(link.warnings).toEqual([]);
    // the owner sets up the parent afterwards
    const parentIdp = new TestIdp({ entityId: 'https://idp.late.test/saml' });
    const parent = await svc.api(project.ownerToken, 'POST', providersOf(project), { kind: 'saml', name: 'Late HQ', domains: ['late.test'], metadata_xml: parentIdp.metadataXml() });
    expect([parent.status, parent.body.warnings]).toEqual([201, undefined]);

    const holderIdp = new TestIdp({ entityId: 'https://idp.eu.late.test/saml' });
    expect((await page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: holderIdp.metadataXml() })).status).toBe(200);
    // the draft is more specific than the live parent: its users are the draft's to sign in
    expect(await samlTest(holderIdp, link.secret, 'zoe@eu.late.test')).toMatchObject({ ok: true });
    const activated = await page(link.secret, 'POST', '/activate');
    expect(activated.status, JSON.stringify(activated.body)).toBe(200);
    expect(activated.body.warnings).toEqual([
      {
        code: 'takes_over_subdomain',
        domain: 'eu.late.test',
        provider_id: parent.body.id,
        provider_name: 'Late HQ',
        provider_domain: 'late.test',
        message: expect.stringContaining('they now sign in through this provider'),
      },
    ]);
    const mail = await eventually(async () => smtp.received.find((m) => m.subject === 'SSO provider activated for eu.late.test'), 10_000, 'owner notice');
    expect(mail.text).toContain('Users who moved to it from another live provider');
    expect(mail.text).toContain(`users of eu.late.test, who signed in through "Late HQ" (late.test, id ${parent.body.id}) until now`);
    const audit = await svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/audit?limit=50`);
    const entry = audit.body.find((a: { action: string }) => a.action === 'sso_setup_link.activate');
    expect(entry.details.takes_over_from).toEqual([{ domain: 'eu.late.test', provider_id: parent.body.id }]);

    // and the parent's IdP may no longer assert them
    const started = await startSignIn(project, { provider_id: parent.body.id });
    const req = readAuthnRequest(started.url!);
    const landed = await postToAcs(req.acsUrl, { SAMLResponse: parentIdp.signedResponse({ sp: { entityId: req.issuer, acsUrl: req.acsUrl }, requestId: req.id, nameId: 'zoe@eu.late.test' }), RelayState: req.relayState! });
    expect(landed.searchParams.get('error')).toBe('email_domain_other_provider');
  });

  it('an activation that moves nobody says so in the email; the owner enabling a draft answers the warnings', async () => {
    const project = await svc.project('enterprise');
    const idp = new TestIdp({ entityId: 'https://idp.calm.test/saml' });
    const link = await makeLink(project, { domains: ['calm.test'], kind: 'saml' });
    expect((await page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: idp.metadataXml() })).status).toBe(200);
    expect(await samlTest(idp, link.secret, 'x@calm.test')).toMatchObject({ ok: true });
    expect((await page(link.secret, 'POST', '/activate')).body.warnings).toEqual([]);
    const mail = await eventually(async () => smtp.received.find((m) => m.subject === 'SSO provider activated for calm.test'), 10_000, 'owner notice');
    expect(mail.text).toContain('No users moved from another provider');

    // a draft for a subdomain, enabled by the owner instead of the holder
    const sub = await makeLink(project, { domains: ['eu.calm.test'], kind: 'saml' });
    expect(sub.warnings).toHaveLength(1);
    expect((await page(sub.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: new TestIdp({ entityId: 'https://idp.eu.calm.test/saml' }).metadataXml() })).status).toBe(200);
    const enabled = await svc.api(project.ownerToken, 'PATCH', `${providersOf(project)}/${sub.provider_id}`, { enabled: true });
    expect(enabled.status).toBe(200);
    expect(enabled.body.warnings).toEqual([expect.objectContaining({ domain: 'eu.calm.test', provider_id: link.provider_id, provider_domain: 'calm.test' })]);
    // nothing moves on a change that puts no domain live
    expect((await svc.api(project.ownerToken, 'PATCH', `${providersOf(project)}/${sub.provider_id}`, { name: 'EU Calm' })).body).not.toHaveProperty('warnings');
  });
});

describe("a test sign-in's answer carries no network detail", () => {
  /** A plain HTTP server on `host` that records what reaches it; `handle` answers. */
  async function serve(host: string, handle: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
    const hits: string[] = [];
    const server = http.createServer((req, res) => {
      hits.push(req.url ?? '');
      handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    const url = `http://${host}:${(server.address() as AddressInfo).port}`;
    const stop = () => new Promise<void>((resolve) => (server.close(() => resolve()), server.closeAllConnections()));
    return { url, hits, stop };
  }

  it('explains a failed token exchange with one generic sentence, whatever the token endpoint did (refused address, closed port, HTML, odd JSON), and an IdP error by its code only; a real sign-in too', async () => {
    const project = await svc.project('enterprise');
    let tokenEndpoint = '';
    // an OIDC "IdP" whose discovery document sends the token request wherever the test says
    const fake = await serve('127.0.0.1', (req, res) => {
      if (req.url === '/.well-known/openid-configuration') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ issuer: fake.url, authorization_endpoint: `${fake.url}/auth`, token_endpoint: tokenEndpoint, jwks_uri: `${fake.url}/jwks`, response_types_supported: ['code'], subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['RS256'] }));
        return;
      }
      res.writeHead(404);
      res.end();
    });
    const internal = await serve('127.0.0.2', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"access_token":"internal-secret-token","token_type":"bearer"}');
    });
    const html = await serve('127.0.0.1', (_req, res) => {
      res.writeHead(500, { 'content-type': 'text/html' });
      res.end('<html><title>internal-admin-console 1.2</title></html>');
    });
    const oddJson = await serve('127.0.0.1', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"internal_shape":{"cluster":"db-primary-7"}}');
    });
    const oauthError = await serve('127.0.0.1', (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":"invalid_client","error_description":"client unknown at 10.1.2.3 (internal-realm)"}');
    });
    const closedPort = await freePort();
    try {
      const link = await makeLink(project, { domains: ['net.test'], kind: 'oidc' });
      const run = async (endpoint: string) => {
        tokenEndpoint = endpoint;
        // a save re-discovers (and a new version skips the service's discovery cache)
        const saved = await page(link.secret, 'PUT', '/provider', { kind: 'oidc', name: `try ${endpoint}`, issuer: fake.url, client_id: 'c', client_secret: 's' });
        expect(saved.status, JSON.stringify(saved.body)).toBe(200);
        const started = await page(link.secret, 'POST', '/test');
        expect(started.status, JSON.stringify(started.body)).toBe(200);
        const auth = new URL(started.body.url);
        // the IdP sends the browser back with a code
        const callback = new URL(auth.searchParams.get('redirect_uri')!);
        callback.searchParams.set('code', 'the-code');
        callback.searchParams.set('state', auth.searchParams.get('state')!);
        const res = await fetch(callback, { redirect: 'manual' });
        expect(res.status).toBe(303);
        const to = new URL(res.headers.get('location')!);
        expect(to.pathname).toBe('/dashboard/sso-setup.html');
        const result = await page(link.secret, 'GET', `/tests/${to.searchParams.get('test')}`);
        expect(result.status).toBe(200);
        return result.body;
      };
      const leaks = (body: unknown, ...extra: string[]) => {
        const text = JSON.stringify(body);
        for (const s of ['fetch failed', 'ECONNREFUSED', 'refused:', '127.0.0', 'loopback', 'OUTBOUND_ALLOW_CIDRS', 'content-type', 'status code', 'invalid response', ...extra]) expect(text, s).not.toContain(s);
      };
      for (const [endpoint, extra] of [
        [`${internal.url}/token`, [`:${new URL(internal.url).port}`, 'internal-secret-token']],
        [`http://127.0.0.1:${closedPort}/token`, [`:${closedPort}`]],
        [`${html.url}/token`, ['internal-admin-console', 'HTTP 500']],
        [`${oddJson.url}/token`, ['internal_shape', 'db-primary-7', 'access_token']],
      ] as [string, string[]][]) {
        const body = await run(endpoint);
        expect(body, endpoint).toMatchObject({ ok: false, kind: 'oidc', problem: { check: 'idp_request', detail: expect.stringContaining('could not complete its requests') } });
        leaks(body, ...extra);
      }
      expect(internal.hits).toEqual([]);
      expect(html.hits).toEqual(['/token']);

      const refused = await run(`${oauthError.url}/token`);
      expect(refused).toMatchObject({ ok: false, problem: { check: 'client', detail: 'The identity provider refused the code exchange: invalid_client.' } });
      leaks(refused, '10.1.2.3', 'internal-realm', 'client unknown');

      // a live provider's real sign-in tells the browser no more (after an activation, the
      // holder's IdP still chooses the endpoints)
      tokenEndpoint = `http://127.0.0.1:${closedPort}/token`;
      const live = await svc.api(project.ownerToken, 'POST', providersOf(project), { kind: 'oidc', name: 'Live', domains: ['live-net.test'], issuer: fake.url, client_id: 'c', client_secret: 's' });
      expect(live.status, JSON.stringify(live.body)).toBe(201);
      const started = await startSignIn(project, { provider_id: live.body.id }, 'http://localhost:3000/cb');
      const auth = new URL(started.url!);
      const callback = new URL(auth.searchParams.get('redirect_uri')!);
      callback.searchParams.set('code', 'the-code');
      callback.searchParams.set('state', auth.searchParams.get('state')!);
      const res = await fetch(callback, { redirect: 'manual' });
      const landed = new URL(res.headers.get('location')!);
      expect([landed.searchParams.get('error'), landed.searchParams.get('error_description')]).toEqual(['sso_failed', IDP_REQUEST_FAILED]);
    } finally {
      await Promise.all([fake.stop(), internal.stop(), html.stop(), oddJson.stop(), oauthError.stop()]);
    }
  });
});
