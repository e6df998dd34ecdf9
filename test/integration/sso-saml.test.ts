// SAML providers and sign-in through the real service: providers from pasted and downloaded
// metadata, the SP metadata the IdP admin imports, sign-ins answered by a test IdP that signs a
// fresh response to the service's own AuthnRequest, domain routing, certificate rotation with
// refresh_metadata, and both clients (@supabase/supabase-js unchanged, and the project's own).
import { DOMParser } from '@xmldom/xmldom';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { exchangeCode, startSignIn } from '../helpers/oidc-idp.js';
import { postToAcs, readAuthnRequest, serveMetadata, TestIdp, testKeys } from '../helpers/saml-idp.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { supabaseClient } from '../helpers/supabase.js';

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';

describe('SAML providers and sign-in', () => {
  let svc: TestService;
  let project: TestProject;
  const app = 'http://app.test';
  const idp = new TestIdp({ entityId: 'https://idp.corp.test/saml', ssoRedirectUrl: 'https://idp.corp.test/sso' });
  let corp: { id: string; acs_url: string; sp_entity_id: string; sp_metadata_url: string };
  const providers = () => `/v1/projects/${project.ref}/auth/providers`;
  const owner = (method: string, path: string, body?: unknown) => svc.api(project.ownerToken, method, path, body);

  /** Service → IdP (answers the real AuthnRequest as `email`) → ACS; returns where the browser lands. */
  async function signIn(selector: Record<string, string>, email: string, opts: { signWith?: typeof testKeys.primary; attributes?: Record<string, string[]>; as?: TestIdp } = {}) {
    const started = await startSignIn(project, selector, `${app}/auth/callback`);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const request = readAuthnRequest(started.url!);
    const samlResponse = (opts.as ?? idp).signedResponse({
      sp: { entityId: request.issuer, acsUrl: request.acsUrl },
      requestId: request.id,
      nameId: email,
      attributes: opts.attributes ?? { email: [email] },
      signWith: opts.signWith,
    });
    const landed = await postToAcs(request.acsUrl, { SAMLResponse: samlResponse, RelayState: request.relayState! });
    return { landed, request, verifier: started.verifier, code: landed.searchParams.get('code'), error: landed.searchParams.get('error'), description: landed.searchParams.get('error_description') };
  }

  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.project('enterprise', { siteUrl: app });
    const r = await owner('POST', `${providers()}/sso`, {
      kind: 'saml',
      name: 'Corp',
      domains: ['corp.test'],
      metadata_xml: idp.metadataXml(),
      attribute_mapping: { extra: { groups: 'groups', dept: 'department' } },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    corp = r.body;
  });
  afterAll(async () => {
    await svc?.stop();
  });

  describe('providers', () => {
    it('answers with the SP fields under the project URL and what it trusts from the metadata', () => {
      const base = `${project.projectUrl}/auth/v1/sso/saml`;
      expect(corp).toMatchObject({
        kind: 'saml',
        domains: ['corp.test'],
        metadata_url: null,
        idp_entity_id: idp.entityId,
        idp_sso_url: idp.ssoRedirectUrl,
        sp_metadata_url: `${base}/metadata/${corp.id}`,
        sp_entity_id: `${base}/metadata/${corp.id}`,
        acs_url: `${base}/acs/${corp.id}`,
        idp_signing_certificates: [{ sha256_fingerprint: expect.stringMatching(/^[0-9A-F:]{95}$/), subject: expect.any(String), not_after: expect.any(String) }],
      });
      expect(corp).not.toHaveProperty('callback_url');
    });

    it('serves SP metadata declaring the ACS (HTTP-POST), the email NameID format and signed assertions', async () => {
      const res = await fetch(corp.sp_metadata_url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/xml/);
      const root = new DOMParser().parseFromString(await res.text(), 'text/xml').documentElement!;
      expect(root.getAttribute('entityID')).toBe(corp.sp_entity_id);
      const sp = root.getElementsByTagNameNS(MD, 'SPSSODescriptor')[0];
      expect(sp.getAttribute('WantAssertionsSigned')).toBe('true');
      expect(sp.getAttribute('AuthnRequestsSigned')).toBe('false');
      const acs = Array.from(sp.getElementsByTagNameNS(MD, 'AssertionConsumerService')).map((e) => [e.getAttribute('Binding'), e.getAttribute('Location')]);
      expect(acs).toEqual([['urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST', corp.acs_url]]);
      expect(Array.from(sp.getElementsByTagNameNS(MD, 'NameIDFormat')).map((e) => e.textContent)).toEqual(['urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress']);
      expect((await fetch(`${project.projectUrl}/auth/v1/sso/saml/metadata/00000000-0000-4000-8000-000000000000`)).status).toBe(404);
      const openapi = await svc.api(null, 'GET', '/openapi.json');
      expect(Object.keys(openapi.body.paths)).toEqual(
        expect.arrayContaining(['/projects/{ref}/auth/v1/sso/saml/metadata/{providerId}', '/projects/{ref}/auth/v1/sso/saml/acs/{providerId}']),
      );
    });

    it('refuses metadata without a signing certificate, unreadable metadata and unusable combinations', async () => {
      const create = (body: Record<string, unknown>) => owner('POST', `${providers()}/sso`, { kind: 'saml', name: 'X', domains: ['x.test'], ...body });
      const noCert = await create({ metadata_xml: idp.metadataXml({ withSigningKeys: false }) });
      expect([noCert.status, noCert.body.code]).toEqual([400, 'saml_metadata_no_signing_cert']);
      const garbage = await create({ metadata_xml: '<html>not metadata</html>' });
      expect([garbage.status, garbage.body.code]).toEqual([400, 'saml_metadata_invalid']);
      const neither = await create({});
      expect([neither.status, neither.body.code]).toEqual([400, 'validation_failed']);
      const both = await create({ metadata_xml: idp.metadataXml(), metadata_url: 'https://idp.x.test/md' });
      expect([both.status, both.body.code]).toEqual([400, 'validation_failed']);
      const oidcField = await create({ metadata_xml: idp.metadataXml(), client_id: 'x' });
      expect([oidcField.status, oidcField.body.code]).toEqual([400, 'validation_failed']);
      const refreshPasted = await owner('PATCH', `${providers()}/sso/${corp.id}`, { refresh_metadata: true });
      expect([refreshPasted.status, refreshPasted.body.code]).toEqual([400, 'validation_failed']);
    });

    it('downloads metadata_url on save, refuses one that does not answer, and tests it without changing anything', async () => {
      const other = new TestIdp({ entityId: 'https://idp.dl.test/saml' });
      const server = await serveMetadata(other);
      try {
        const r = await owner('POST', `${providers()}/sso`, { kind: 'saml', name: 'Downloaded', domains: ['dl.test'], metadata_url: server.url });
        expect(r.status, JSON.stringify(r.body)).toBe(201);
        expect(r.body).toMatchObject({ metadata_url: server.url, metadata_xml: null, idp_entity_id: other.entityId });

        server.idp = new TestIdp({ entityId: other.entityId, publishedKeys: [testKeys.secondary] });
        const tested = await owner('POST', `${providers()}/${r.body.id}/test`);
        expect(tested.status).toBe(200);
        expect(tested.body).toMatchObject({ ok: true, kind: 'saml', idp_entity_id: other.entityId, matches_stored: false, problem: null });
        const after = await owner('GET', `${providers()}/sso/${r.body.id}`);
        expect(after.body.idp_signing_certificates).toEqual(r.body.idp_signing_certificates);

        server.status = 404;
        const failing = await owner('POST', `${providers()}/${r.body.id}/test`);
        expect(failing.body).toMatchObject({ ok: false, problem: { code: 'saml_metadata_invalid', message: expect.stringContaining('HTTP 404') } });
        const refused = await owner('POST', `${providers()}/sso`, { kind: 'saml', name: 'Broken', domains: ['broken.test'], metadata_url: server.url });
        expect([refused.status, refused.body.code]).toEqual([400, 'saml_metadata_invalid']);
      } finally {
        await server.stop();
      }
    });
  });

  describe('sign-in', () => {
    it('signs a user in just in time and ends in a session, with the SAML attributes mapped', async () => {
      const r = await signIn({ email: 'alice@corp.test' }, 'Alice@corp.test', {
        attributes: { email: ['alice@corp.test'], givenName: ['Alice'], surname: ['Liddell'], groups: ['eng', 'admins'], department: ['R&D'] },
      });
      expect(r.error, r.description ?? '').toBeNull();
      expect(r.landed.origin + r.landed.pathname).toBe(`${app}/auth/callback`);
      expect(r.request).toMatchObject({ issuer: corp.sp_entity_id, acsUrl: corp.acs_url, destination: idp.ssoRedirectUrl });

      const s = await exchangeCode(project, r.code!, r.verifier);
      expect(s.status, JSON.stringify(s.body)).toBe(200);
      expect(s.body).toMatchObject({ token_type: 'bearer', access_token: expect.any(String), refresh_token: expect.any(String) });
      expect(s.body.user).toMatchObject({
        email: 'alice@corp.test',
        app_metadata: { provider: `sso:${corp.id}` },
        user_metadata: { name: 'Alice Liddell', first_name: 'Alice', last_name: 'Liddell', groups: ['eng', 'admins'], dept: 'R&D' },
      });
      expect(s.body.user.identities[0]).toMatchObject({ id: 'alice@corp.test', provider: `sso:${corp.id}`, provider_type: 'saml' });
      const claims = JSON.parse(Buffer.from(s.body.access_token.split('.')[1], 'base64url').toString());
      expect(claims.amr).toEqual([{ method: 'sso/saml', timestamp: expect.any(Number) }]);

      // the same NameID later is the same user
      const again = await signIn({ domain: 'corp.test' }, 'alice@corp.test');
      const s2 = await exchangeCode(project, again.code!, again.verifier);
      expect(s2.body.user.id).toBe(s.body.user.id);
    });

    it('routes subdomains to the provider of the parent domain and uses the NameID when there is no email attribute', async () => {
      const r = await signIn({ email: 'bob@eu.corp.test' }, 'bob@eu.corp.test', { attributes: { displayName: ['Bob B.'] } });
      expect(r.error, r.description ?? '').toBeNull();
      expect(r.request.acsUrl).toBe(corp.acs_url);
      const s = await exchangeCode(project, r.code!, r.verifier);
      expect(s.body.user).toMatchObject({ email: 'bob@eu.corp.test', user_metadata: { name: 'Bob B.' } });
    });

    it('applies the shared user resolution: an email outside the domains is refused', async () => {
      const r = await signIn({ provider_id: corp.id }, 'eve@elsewhere.test');
      expect(r.error).toBe('email_domain_not_allowed');
    });

    it('trusts a new signing key only after refresh_metadata, and drops the old one the same way', async () => {
      const server = await serveMetadata(new TestIdp({ entityId: 'https://idp.rot.test/saml', publishedKeys: [testKeys.primary] }));
      try {
        const created = await owner('POST', `${providers()}/sso`, { kind: 'saml', name: 'Rotating', domains: ['rot.test'], metadata_url: server.url });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const id = created.body.id;
        const as = server.idp;
        const attempt = async (key: typeof testKeys.primary) => (await signIn({ domain: 'rot.test' }, 'carol@rot.test', { signWith: key, as })).error;

        expect(await attempt(testKeys.primary)).toBeNull();
        expect(await attempt(testKeys.secondary)).toBe('invalid_saml_response');

        // the IdP publishes the next key beside the current one
        server.idp = new TestIdp({ entityId: as.entityId, publishedKeys: [testKeys.primary, testKeys.secondary] });
        const refreshed = await owner('PATCH', `${providers()}/sso/${id}`, { refresh_metadata: true });
        expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
        expect(refreshed.body.idp_signing_certificates).toHaveLength(2);
        expect(await attempt(testKeys.secondary)).toBeNull();
        expect(await attempt(testKeys.primary)).toBeNull();

        // ... then retires the old one
        server.idp = new TestIdp({ entityId: as.entityId, publishedKeys: [testKeys.secondary] });
        expect((await owner('PATCH', `${providers()}/sso/${id}`, { refresh_metadata: true })).status).toBe(200);
        expect(await attempt(testKeys.secondary)).toBeNull();
        expect(await attempt(testKeys.primary)).toBe('invalid_saml_response');
      } finally {
        await server.stop();
      }
    });
  });

  describe('clients', () => {
    it('completes a SAML sign-in with @supabase/supabase-js unchanged', async () => {
      const supabase = supabaseClient(project);
      const { data, error } = await supabase.auth.signInWithSSO({ domain: 'corp.test', options: { redirectTo: `${app}/auth/callback`, skipBrowserRedirect: true } });
      expect(error).toBeNull();
      const request = readAuthnRequest(data!.url);
      const samlResponse = idp.signedResponse({ sp: { entityId: request.issuer, acsUrl: request.acsUrl }, requestId: request.id, nameId: 'dana@corp.test' });
      const landed = await postToAcs(request.acsUrl, { SAMLResponse: samlResponse, RelayState: request.relayState! });

      const exchanged = await supabase.auth.exchangeCodeForSession(landed.searchParams.get('code')!);
      expect(exchanged.error).toBeNull();
      expect(exchanged.data.session?.user.email).toBe('dana@corp.test');
      expect(exchanged.data.user?.identities?.[0]).toMatchObject({ id: 'dana@corp.test', provider: `sso:${corp.id}` });
      const me = await supabase.auth.getUser();
      expect(me.data.user?.id).toBe(exchanged.data.user?.id);
      expect((await supabase.auth.signOut()).error).toBeNull();
    });

    it("completes a SAML sign-in with the project's own client", async () => {
      const client = createClient(project.projectUrl, project.anonKey);
      const started = await client.auth.signInWithSSO({ email: 'erin@corp.test', redirectTo: `${app}/auth/callback`, skipBrowserRedirect: true });
      expect(started.error).toBeNull();
      const request = readAuthnRequest(started.data!.url);
      const samlResponse = idp.signedResponse({ sp: { entityId: request.issuer, acsUrl: request.acsUrl }, requestId: request.id, nameId: 'erin@corp.test' });
      const landed = await postToAcs(request.acsUrl, { SAMLResponse: samlResponse, RelayState: request.relayState! });
      const { data, error } = await client.auth.exchangeCodeForSession(landed.searchParams.get('code')!);
      expect(error).toBeNull();
      expect(data!.session).toMatchObject({ token_type: 'bearer', user: { email: 'erin@corp.test' } });
    });
  });
});
