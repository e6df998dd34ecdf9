// SSO setup links: what the link holder must not be able to do, through the real service. The
// service's allow-list admits 127.0.0.1 only (where the suite's IdPs listen), so 127.0.0.2 plays an
// internal host: a metadata URL or issuer pointing there, directly or through a redirect, is
// refused before anything reaches it, and the holder gets one generic sentence whatever happened.
// Also: a save in flight while the link is revoked, an activation racing a save, domain takeover
// warnings, the audit entry of a test start, and drafts staying out of real sign-ins.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discover } from '../../src/sso/oidc/discovery.js';
import { eventually } from '../helpers/env.js';
import { postToAcs, readAuthnRequest, serveMetadata, TestIdp } from '../helpers/saml-idp.js';
import { freePort, startTestService, type TestProject, type TestService } from '../helpers/service.js';

let svc: TestService;
let owner: TestProject;
const idp = new TestIdp({ entityId: 'https://idp.guard.test/saml' });

/** A plain HTTP server on `host` that counts what reaches it; `handle` answers. */
async function serve(host: string, handle: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const url = `http://${host}:${(server.address() as AddressInfo).port}`;
  const stop = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return { url, hits, stop };
}

let internal: Awaited<ReturnType<typeof serve>>;

beforeAll(async () => {
  svc = await startTestService({ env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128' } });
  owner = await svc.project('enterprise');
  // the "internal service": it would answer anything, metadata included
  internal = await serve('127.0.0.2', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' });
    res.end(idp.metadataXml());
  });
});

afterAll(async () => {
  await internal?.stop();
  await svc?.stop();
});

const links = () => `/v1/projects/${owner.ref}/auth/sso/setup-links`;
const makeLink = async (body: Record<string, unknown>) => {
  const r = await svc.api(owner.ownerToken, 'POST', links(), body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return { ...r.body, secret: new URL(r.body.url).hash.slice(1) } as { id: string; secret: string; provider_id: string; warnings: Record<string, string>[] };
};
const page = async (secret: string, method: string, path: string, body?: unknown) => {
  const headers: Record<string, string> = { authorization: `Bearer ${secret}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${svc.url}/v1/sso-setup${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};
const passTest = async (secret: string, email: string) => {
  const started = await page(secret, 'POST', '/test');
  expect(started.status, JSON.stringify(started.body)).toBe(200);
  const req = readAuthnRequest(started.body.url);
  const info = await page(secret, 'GET', '');
  const sp = { entityId: info.body.saml.sp_entity_id, acsUrl: info.body.saml.acs_url };
  const back = await postToAcs(req.acsUrl, { SAMLResponse: idp.signedResponse({ sp, requestId: req.id, nameId: email } as never), RelayState: req.relayState! });
  const result = await page(secret, 'GET', `/tests/${back.searchParams.get('test')}`);
  expect(result.body, JSON.stringify(result.body)).toMatchObject({ ok: true, current: true });
  return result.body as { id: string };
};

const GENERIC_SAML = 'The metadata URL could not be fetched: check it is public and answers with SAML metadata.';
const GENERIC_OIDC = 'The issuer could not be discovered: check it is public and serves its OpenID configuration at /.well-known/openid-configuration.';

describe('SSO setup links: outbound requests go through the SSRF guard', () => {
  it('refuses a private metadata_url, directly or by redirect, with one generic message, and fetches nothing from it', async () => {
    const link = await makeLink({ domains: ['ssrf.test'], kind: 'any' });
    const redirector = await serve('127.0.0.1', (req, res) => {
      res.writeHead(302, { location: req.url === '/to-public' ? `${metadata.url}` : `${internal.url}/latest/meta-data/` });
      res.end();
    });
    const metadata = await serveMetadata(idp);
    const notFound = await serve('127.0.0.1', (_req, res) => {
      res.writeHead(404);
      res.end('no');
    });
    try {
      const closed = `http://127.0.0.1:${await freePort()}/md`;
      for (const url of ['http://10.0.0.1/metadata', 'http://169.254.169.254/latest/meta-data/', `${internal.url}/md`, `${redirector.url}/md`, closed, `${notFound.url}/md`]) {
        const r = await page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_url: url });
        // the same answer whether the address is refused, redirects inward, is closed or answers 404
        expect([r.status, r.body.code, r.body.message], url).toEqual([400, 'saml_metadata_invalid', GENERIC_SAML]);
      }
      expect(internal.hits).toEqual([]);
      expect(redirector.hits).toEqual(['/md']);
      expect(notFound.hits).toEqual(['/md']);
      // an http:// hop onwards to an allowed host is followed (and checked like the first)
      const ok = await page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_url: `${redirector.url}/to-public` });
      expect([ok.status, ok.body.idp_entity_id], JSON.stringify(ok.body)).toEqual([200, idp.entityId]);

      // OIDC: the issuer's discovery goes through the guard too
      const oidc = await page(link.secret, 'PUT', '/provider', { kind: 'oidc', issuer: `${internal.url}/`, client_id: 'a', client_secret: 'b' });
      expect([oidc.status, oidc.body.code, oidc.body.message]).toEqual([400, 'oidc_discovery_failed', GENERIC_OIDC]);
      expect(internal.hits).toEqual([]);

      // the owner is told the reason (the guard applies to them as well)
      const byOwner = await svc.api(owner.ownerToken, 'POST', `/v1/projects/${owner.ref}/auth/providers/sso`, { kind: 'saml', name: 'Inner', domains: ['inner.test'], metadata_url: `${redirector.url}/md` });
      expect([byOwner.status, byOwner.body.code]).toEqual([400, 'saml_metadata_invalid']);
      expect(byOwner.body.message).toMatch(/127\.0\.0\.2 is a loopback address/);
      expect(internal.hits).toEqual([]);
    } finally {
      await redirector.stop();
      await notFound.stop();
      await metadata.stop();
    }
  });

  it("sends the discovered endpoints' requests (token, userinfo, JWKS) through the guard", async () => {
    // a public-looking discovery document whose endpoints point inward
    const lying = await serve('127.0.0.1', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ issuer: lying.url, authorization_endpoint: `${lying.url}/auth`, token_endpoint: `${internal.url}/token`, userinfo_endpoint: `${internal.url}/userinfo`, jwks_uri: `${internal.url}/jwks`, response_types_supported: ['code'] }));
    });
    try {
      const config = await discover(svc.ctx, lying.url, 'a', 'b');
      await expect(client.fetchUserInfo(config, 'token', client.skipSubjectCheck)).rejects.toThrow();
      await expect(client.fetchProtectedResource(config, 'token', new URL(`${internal.url}/anything`), 'GET')).rejects.toThrow();
      expect(internal.hits).toEqual([]);
    } finally {
      await lying.stop();
    }
  });
});

describe('SSO setup links: races with revocation and activation', () => {
  it('refuses a save that was in flight while the link was revoked, and leaves no draft', async () => {
    const link = await makeLink({ domains: ['inflight.test'], kind: 'saml' });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const slow = await serve('127.0.0.1', (_req, res) => {
      void held.then(() => {
        res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' });
        res.end(idp.metadataXml());
      });
    });
    try {
      const saving = page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_url: `${slow.url}/md` });
      await eventually(async () => slow.hits.length > 0, 10_000, 'the metadata download');
      expect((await svc.api(owner.ownerToken, 'DELETE', `${links()}/${link.id}`)).status).toBe(200);
      release();
      const saved = await saving;
      expect([saved.status, saved.body.code, saved.body.details]).toEqual([410, 'sso_setup_link_gone', { state: 'revoked' }]);
      expect((await svc.ctx.db.query('select 1 from sso_providers where id = $1', [link.provider_id])).rowCount).toBe(0);
    } finally {
      await slow.stop();
    }
  });

  it('refuses an activation when the settings changed after its check passed (409), then activates the tested ones', async () => {
    const link = await makeLink({ domains: ['race.test'], kind: 'saml' });
    expect((await page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: idp.metadataXml() })).status).toBe(200);
    await passTest(link.secret, 'ann@race.test');
    // Hold the link's row as a concurrent save would while it writes; the activation passes its
    // check of the stored test, then waits for the row inside its transaction.
    const c = await svc.ctx.db.connect();
    try {
      await c.query('begin');
      await c.query('select 1 from sso_setup_links where id = $1 for update', [link.id]);
      const activating = page(link.secret, 'POST', '/activate');
      await eventually(
        async () => (await svc.ctx.db.query("select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like 'select l.id%for update of l'")).rowCount,
        10_000,
        'the activation waiting for the link',
      );
      // the concurrent save lands: other settings, a new version
      await c.query("update sso_providers set name = 'Settings B', updated_at = now() where id = $1", [link.provider_id]);
      await c.query('commit');
      const refused = await activating;
      expect([refused.status, refused.body.code]).toEqual([409, 'sso_setup_test_required']);
    } finally {
      c.release();
    }
    const row = (await svc.ctx.db.query('select enabled, draft from sso_providers where id = $1', [link.provider_id])).rows[0];
    expect(row).toEqual({ enabled: false, draft: true });
    // after a test of the new settings it goes live
    await passTest(link.secret, 'ann@race.test');
    const ok = await page(link.secret, 'POST', '/activate');
    expect([ok.status, ok.body.provider?.name, ok.body.provider?.enabled]).toEqual([200, 'Settings B', true]);
  });
});

describe('SSO setup links: domains, audit, drafts', () => {
  it('warns at creation when a live provider serves a parent domain (its users of the subdomain would move)', async () => {
    const live = await svc.api(owner.ownerToken, 'POST', `/v1/projects/${owner.ref}/auth/providers/sso`, { kind: 'saml', name: 'Acme HQ', domains: ['acme-hq.test'], metadata_xml: idp.metadataXml() });
    expect(live.status, JSON.stringify(live.body)).toBe(201);
    const child = await makeLink({ domains: ['eu.acme-hq.test', 'other-co.test'] });
    expect(child.warnings).toEqual([
      {
        code: 'takes_over_subdomain',
        domain: 'eu.acme-hq.test',
        provider_id: live.body.id,
        provider_name: 'Acme HQ',
        provider_domain: 'acme-hq.test',
        message: expect.stringContaining('once this link\'s provider is activated'),
      },
    ]);
    expect((await makeLink({ domains: ['unrelated.test'] })).warnings).toEqual([]);
    // a disabled provider routes nobody, so there is nothing to take over
    await svc.api(owner.ownerToken, 'PATCH', `/v1/projects/${owner.ref}/auth/providers/sso/${live.body.id}`, { enabled: false });
    expect((await makeLink({ domains: ['asia.acme-hq.test'] })).warnings).toEqual([]);
  });

  it('records the start of a test sign-in; keeps the draft out of sign-in by provider_id; a test sign-in creates no user or identity', async () => {
    const link = await makeLink({ domains: ['draft.test'], kind: 'saml' });
    expect((await page(link.secret, 'PUT', '/provider', { kind: 'saml', metadata_xml: idp.metadataXml() })).status).toBe(200);
    const byId = await fetch(`${owner.projectUrl}/auth/v1/sso`, {
      method: 'POST',
      headers: { apikey: owner.anonKey, 'content-type': 'application/json' },
      body: JSON.stringify({ provider_id: link.provider_id, skip_http_redirect: true, code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }),
    });
    expect([byId.status, (await byId.json()).code]).toEqual([404, 'sso_provider_not_found']);

    await passTest(link.secret, 'bob@draft.test');
    const audit = await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/audit?limit=100`);
    const start = audit.body.find((a: { action: string; details: { setup_link_id?: string } }) => a.action === 'sso_setup_link.test_start' && a.details.setup_link_id === link.id);
    expect(start).toMatchObject({ actor: { setup_link_id: link.id }, details: { provider_id: link.provider_id, kind: 'saml', flow_id: expect.any(String) } });

    expect((await svc.api(owner.ownerToken, 'GET', `/v1/projects/${owner.ref}/auth/users`)).body.total).toBe(0);
    const stored = await svc.ctx.db.query("select (select count(*) from users where project_ref = $1)::int as users, (select count(*) from identities where provider_id = $2)::int as identities", [owner.ref, link.provider_id]);
    expect(stored.rows[0]).toEqual({ users: 0, identities: 0 });
  });
});
