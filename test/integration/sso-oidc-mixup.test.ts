// An IdP mix-up (RFC 9700 4.4) through the OIDC redirect URI, found by an attacker's review on
// 2026-11-29: with one redirect URI for every OIDC provider of a project, the callback chose the
// provider by the state alone. The holder of a setup link (an outsider) saved a draft whose
// issuer was their own server, started its test sign-in, and lured a user of the project's real
// IdP through that IdP's authorization URL carrying the draft's state: the IdP sent its code to
// the shared callback, which redeemed it at the attacker's token endpoint; the attacker then
// finished a sign-in of their own with the stolen code and held a session as the victim. Each
// provider now has a redirect URI of its own and a callback is taken only at its flow's
// provider's URI. The IdPs are real (oidc-provider); the attacker's is a plain HTTP server that
// records what reaches its token endpoint. RFC 9207's `iss` would stop this too, but many IdPs do
// not send it, so the IdPs here act as such an IdP (no `iss`, none claimed in discovery).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arriveAt, exchangeCode, signInThrough, startOidcIdp, startSignIn, type OidcIdp } from '../helpers/oidc-idp.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

const app = 'http://app.test';

/** An OIDC issuer an attacker runs: discovery, and a token endpoint that keeps what it is sent. */
async function startAttackerIssuer() {
  const tokenRequests: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      if (req.url === '/.well-known/openid-configuration') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            issuer: base,
            authorization_endpoint: `${base}/authorize`,
            token_endpoint: `${base}/token`,
            jwks_uri: `${base}/jwks`,
            response_types_supported: ['code'],
            subject_types_supported: ['public'],
            id_token_signing_alg_values_supported: ['RS256'],
          }),
        );
      } else if (req.url === '/token') {
        tokenRequests.push(body);
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}');
      } else if (req.url === '/jwks') res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":[]}');
      else res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, tokenRequests, stop: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('OIDC: a code goes back only to the provider whose IdP issued it', () => {
  let svc: TestService;
  let project: TestProject;
  let idp: OidcIdp;
  let attacker: Awaited<ReturnType<typeof startAttackerIssuer>>;
  let corp: { id: string; callback_url: string };

  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.project('enterprise', { siteUrl: app });
    idp = await startOidcIdp({ redirectUris: [], withoutIss: true });
    idp.setAccount('victim', { email: 'victim@corp.test', email_verified: true });
    attacker = await startAttackerIssuer();
    const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
      kind: 'oidc', name: 'Corp', domains: ['corp.test'], issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    corp = r.body;
    expect(corp.callback_url).toBe(`${project.projectUrl}/auth/v1/sso/oidc/callback/${corp.id}`);
    idp.allowRedirect(corp.callback_url);
  });
  afterAll(async () => {
    await attacker?.stop();
    await idp?.stop();
    await svc?.stop();
  });

  /** The setup page's API, with a link's secret (the attacker holds one). */
  const page = async (secret: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${svc.url}/v1/sso-setup${path}`, { method, headers: { authorization: `Bearer ${secret}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };

  it("a lure carrying a setup link's test state through the project's IdP sends the victim's code nowhere, and no session comes of it", async () => {
    // the owner hands an outside admin a setup link for their own domain
    const link = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/sso/setup-links`, { domains: ['evil.test'], kind: 'oidc' });
    expect(link.status, JSON.stringify(link.body)).toBe(201);
    const secret = new URL(link.body.url).hash.slice(1);
    // 1. the link's draft points at the attacker's issuer; its test sign-in gives a state (flow X)
    const saved = await page(secret, 'PUT', '/provider', { kind: 'oidc', issuer: attacker.url, client_id: 'evil', client_secret: 'evil-secret' });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    const test = await page(secret, 'POST', '/test');
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    const stateX = new URL(test.body.url).searchParams.get('state')!;
    // 2. a sign-in of the attacker's own at the project's IdP (flow B, the attacker's PKCE)
    const mine = await startSignIn(project, { domain: 'corp.test' }, `${app}/cb`);
    expect(mine.url, JSON.stringify(mine.body)).toBeTruthy();
    // 3. the lure: the IdP's authorization URL of flow B, with flow X's state
    const lure = new URL(mine.url!);
    lure.searchParams.set('state', stateX);
    const back = await idp.login(lure.toString(), 'victim');
    // the IdP sends the browser to the URI registered with it: the corp provider's own
    expect(back.startsWith(`${corp.callback_url}?`)).toBe(true);
    const stolenCode = new URL(back).searchParams.get('code')!;
    const landed = await arriveAt(back);
    // 4. refused at once: the code went to no token endpoint, the attacker's least of all
    expect(attacker.tokenRequests).toEqual([]);
    expect(landed.searchParams.get('error')).toBe('sso_failed');
    // (the code itself stays in the victim's browser, unredeemed; what the attacker needed was its
    // exchange at their token endpoint, which never happened)
    expect(stolenCode).toBeTruthy();
  });

  it("a state that comes back to another provider's URI, or to the shared one, is used up without a request", async () => {
    const started = await startSignIn(project, { domain: 'corp.test' }, `${app}/cb`);
    const back = new URL(await idp.login(started.url!, 'victim'));
    const elsewhere = `${project.projectUrl}/auth/v1/sso/oidc/callback/00000000-0000-4000-8000-000000000001${back.search}`;
    expect((await arriveAt(elsewhere)).searchParams.get('error')).toBe('sso_failed');
    // the flow is single use: the right URI now finds nothing either
    expect((await arriveAt(back.toString())).searchParams.get('error')).toBe('flow_state_not_found');

    const again = await startSignIn(project, { domain: 'corp.test' }, `${app}/cb`);
    const back2 = new URL(await idp.login(again.url!, 'victim'));
    expect((await arriveAt(`${project.projectUrl}/auth/v1/sso/oidc/callback${back2.search}`)).searchParams.get('error')).toBe('sso_failed');
  });

  it("another project's provider, or this provider under another project, takes no state of this one; the id's case is one spelling", async () => {
    const other = await svc.project('enterprise', { siteUrl: app });
    const theirs = await svc.api(other.ownerToken, 'POST', `/v1/projects/${other.ref}/auth/providers/sso`, {
      kind: 'oidc', name: 'Theirs', domains: ['theirs.test'], issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret,
    });
    expect(theirs.status, JSON.stringify(theirs.body)).toBe(201);
    const cb = (ref: string, id: string) => `${svc.url}/projects/${ref}/auth/v1/sso/oidc/callback/${id}`;
    const signIn = async () => new URL(await idp.login((await startSignIn(project, { domain: 'corp.test' }, `${app}/cb`)).url!, 'victim')).search;
    // this project's state at this project's path, naming another project's provider
    expect((await arriveAt(`${cb(project.ref, theirs.body.id)}${await signIn()}`)).searchParams.get('error')).toBe('sso_failed');
    // this project's state under the other project's path, naming this provider: no such flow there
    expect((await arriveAt(`${cb(other.ref, corp.id)}${await signIn()}`)).searchParams.get('error')).toBe('flow_state_not_found');
    // the provider's id in capitals is the same URI (the path is matched case-insensitively on the id)
    const upper = await arriveAt(`${cb(project.ref, corp.id.toUpperCase())}${await signIn()}`);
    expect(upper.searchParams.get('error'), upper.toString()).toBeNull();
    expect(upper.searchParams.get('code')).toBeTruthy();
    expect(attacker.tokenRequests).toEqual([]);
  });

  it("another IdP behind a provider does not inherit the old one's identities by subject", async () => {
    const [one, two] = await Promise.all([startOidcIdp({ redirectUris: [] }), startOidcIdp({ redirectUris: [] })]);
    try {
      const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
        kind: 'oidc', name: 'Moves', domains: ['moves.test'], issuer: one.issuer, client_id: one.clientId, client_secret: one.clientSecret,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      for (const idp of [one, two]) idp.allowRedirect(r.body.callback_url);
      one.setAccount('1001', { email: 'ceo@moves.test', email_verified: true });
      const ceo = await signInThrough(one, project, '1001', { domain: 'moves.test' }, `${app}/cb`);
      const ceoUser = (await exchangeCode(project, ceo.code!, ceo.verifier)).body.user;
      expect(ceoUser.email).toBe('ceo@moves.test');

      // the owner points the provider at another IdP, whose sub 1001 is someone else
      const moved = await svc.api(project.ownerToken, 'PATCH', `/v1/projects/${project.ref}/auth/providers/sso/${r.body.id}`, { issuer: two.issuer });
      expect(moved.status, JSON.stringify(moved.body)).toBe(200);
      const audit = await svc.ctx.db.query(`select details from audit_log where resource_id = $1 and action = 'sso_provider.update' order by created_at desc limit 1`, [r.body.id]);
      expect(audit.rows[0].details).toMatchObject({ identities_released: 1 });
      two.setAccount('1001', { email: 'someone@moves.test', email_verified: true });
      const other = await signInThrough(two, project, '1001', { domain: 'moves.test' }, `${app}/cb`);
      expect(other.error, other.landed.toString()).toBeNull();
      const otherUser = (await exchangeCode(project, other.code!, other.verifier)).body.user;
      expect(otherUser.email).toBe('someone@moves.test');
      expect(otherUser.id).not.toBe(ceoUser.id);
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });

  it("an IdP's email is taken in one spelling: a second @ is no address, a trailing dot the same account", async () => {
    const idp2 = await startOidcIdp({ redirectUris: [] });
    try {
      const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
        kind: 'oidc', name: 'Spellings', domains: ['spell.test'], issuer: idp2.issuer, client_id: idp2.clientId, client_secret: idp2.clientSecret,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      idp2.allowRedirect(r.body.callback_url);
      idp2.setAccount('two-at', { email: 'ceo@acme.test@spell.test', email_verified: true });
      expect((await signInThrough(idp2, project, 'two-at', { domain: 'spell.test' }, `${app}/cb`)).error).toBe('email_domain_not_allowed');
      idp2.setAccount('plain', { email: 'ann@spell.test', email_verified: true });
      idp2.setAccount('dotted', { email: 'Ann@Spell.test.', email_verified: true });
      const a = await signInThrough(idp2, project, 'plain', { domain: 'spell.test' }, `${app}/cb`);
      const annUser = (await exchangeCode(project, a.code!, a.verifier)).body.user;
      expect(annUser.email).toBe('ann@spell.test');
      // another subject with the same address in another spelling: the same address, so the
      // linking rules decide (this project does not link): never a second account for it
      const b = await signInThrough(idp2, project, 'dotted', { domain: 'spell.test' }, `${app}/cb`);
      expect(b.error).toBe('email_exists');
    } finally {
      await idp2.stop();
    }
  });

  it('a provider made before per-provider URIs keeps the shared one until the owner moves it, and then only its own works', async () => {
    const legacyIdp = await startOidcIdp({ redirectUris: [`${project.projectUrl}/auth/v1/sso/oidc/callback`], withoutIss: true });
    try {
      legacyIdp.setAccount('old-1', { email: 'old@legacy.test', email_verified: true });
      const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
        kind: 'oidc', name: 'Legacy', domains: ['legacy.test'], issuer: legacyIdp.issuer, client_id: legacyIdp.clientId, client_secret: legacyIdp.clientSecret,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      // as migration 113 leaves a provider that existed before it
      await svc.ctx.db.query('update sso_providers set oidc_shared_callback = true where id = $1', [r.body.id]);
      const shown = await svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/auth/providers/sso/${r.body.id}`);
      expect(shown.body.callback_url).toBe(`${project.projectUrl}/auth/v1/sso/oidc/callback`);

      const first = await startSignIn(project, { domain: 'legacy.test' }, `${app}/cb`);
      const landed = await arriveAt(await legacyIdp.login(first.url!, 'old-1'));
      expect(landed.searchParams.get('error'), landed.toString()).toBeNull();
      expect((await exchangeCode(project, landed.searchParams.get('code')!, first.verifier)).body.user.email).toBe('old@legacy.test');

      // SAML has its own ACS URL: the option is OIDC's
      const moved = await svc.api(project.ownerToken, 'PATCH', `/v1/projects/${project.ref}/auth/providers/sso/${r.body.id}`, { callback: 'own' });
      expect(moved.status, JSON.stringify(moved.body)).toBe(200);
      expect(moved.body.callback_url).toBe(`${project.projectUrl}/auth/v1/sso/oidc/callback/${r.body.id}`);
      legacyIdp.allowRedirect(moved.body.callback_url);
      const second = await startSignIn(project, { domain: 'legacy.test' }, `${app}/cb`);
      expect(new URL(second.url!).searchParams.get('redirect_uri')).toBe(moved.body.callback_url);
      const back = new URL(await legacyIdp.login(second.url!, 'old-1'));
      // the shared URI no longer takes its flows
      expect((await arriveAt(`${project.projectUrl}/auth/v1/sso/oidc/callback${back.search}`)).searchParams.get('error')).toBe('sso_failed');
      const third = await startSignIn(project, { domain: 'legacy.test' }, `${app}/cb`);
      const ok = await arriveAt(await legacyIdp.login(third.url!, 'old-1'));
      expect((await exchangeCode(project, ok.searchParams.get('code')!, third.verifier)).body.user.email).toBe('old@legacy.test');
    } finally {
      await legacyIdp.stop();
    }
  });
});
