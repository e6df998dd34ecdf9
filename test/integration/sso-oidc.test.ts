// OIDC sign-in end to end against real oidc-provider IdPs: domain routing and every branch of user
// resolution in the order of docs/sso.md, through the service's public auth endpoints.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { authCall, exchangeCode, signInThrough, startOidcIdp, startSignIn, type OidcIdp } from '../helpers/oidc-idp.js';

describe('OIDC sign-in', () => {
  let svc: TestService;
  let project: TestProject;
  let acme: OidcIdp;
  let eu: OidcIdp;
  let acmeProvider: string;
  let euProvider: string;
  const app = 'http://localhost:3000';
  const providers = () => `/v1/projects/${project.ref}/auth/providers/sso`;
  const owner = (method: string, path: string, body?: unknown) => svc.api(project.ownerToken, method, path, body);
  const settings = (body: Record<string, unknown>) => owner('PATCH', `/v1/projects/${project.ref}`, body);

  async function addProvider(idp: OidcIdp, domains: string[], extra: Record<string, unknown> = {}): Promise<string> {
    const r = await owner('POST', providers(), { kind: 'oidc', name: `IdP for ${domains[0]}`, domains, issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret, ...extra });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    idp.allowRedirect(r.body.callback_url);
    return r.body.id;
  }

  async function localUser(email: string, verified: boolean): Promise<string> {
    const r = await owner('POST', `/v1/projects/${project.ref}/auth/users`, { email, email_confirm: verified });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.id;
  }

  /** Signs in as `sub` with the given IdP account; returns the session (or the ?error= it got). */
  async function signIn(idp: OidcIdp, sub: string, email: string, claims: Record<string, unknown> = {}) {
    idp.setAccount(sub, { email, email_verified: true, ...claims });
    // chosen by provider id: the asserted email may lie outside the provider's domains on purpose
    const r = await signInThrough(idp, project, sub, { provider_id: idp === acme ? acmeProvider : euProvider });
    if (r.error) return { error: r.error, description: r.landed.searchParams.get('error_description') };
    const s = await exchangeCode(project, r.code!, r.verifier);
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    return { user: s.body.user, session: s.body };
  }

  beforeAll(async () => {
    // dozens of sign-ins from one address for one project; the limit itself: sso-rate-limit.test.ts
    svc = await startTestService({ env: { AUTH_RATE_LIMIT_SSO: 'off' } });
    project = await svc.project('enterprise', { siteUrl: app });
    const callback = [`${project.projectUrl}/auth/v1/sso/oidc/callback`];
    [acme, eu] = await Promise.all([startOidcIdp({ redirectUris: callback, extraClaims: ['department'] }), startOidcIdp({ redirectUris: callback })]);
    acmeProvider = await addProvider(acme, ['Acme.test'], { attribute_mapping: { extra: { dept: 'department' } } });
    euProvider = await addProvider(eu, ['eu.acme.test']);
  });
  afterAll(async () => {
    await Promise.all([acme?.stop(), eu?.stop()]);
    await svc?.stop();
  });

  describe('routing', () => {
    const idpOf = async (selector: Record<string, string>) => {
      const r = await startSignIn(project, selector);
      return r.url ? new URL(r.url).origin : `${r.status} ${r.body?.code}`;
    };

    it('sends an exact domain, an email and a subdomain to the provider of the parent domain', async () => {
      expect(await idpOf({ domain: 'acme.test' })).toBe(acme.url);
      expect(await idpOf({ domain: 'ACME.test' })).toBe(acme.url);
      expect(await idpOf({ email: 'someone@acme.test' })).toBe(acme.url);
      expect(await idpOf({ email: 'someone@us.acme.test' })).toBe(acme.url);
      expect(await idpOf({ provider_id: acmeProvider })).toBe(acme.url);
    });

    it('picks the most specific domain', async () => {
      expect(await idpOf({ domain: 'eu.acme.test' })).toBe(eu.url);
      expect(await idpOf({ email: 'x@sales.eu.acme.test' })).toBe(eu.url);
    });

    it('skips disabled providers and answers 404 sso_provider_not_found when none is left', async () => {
      expect((await owner('PATCH', `${providers()}/${euProvider}`, { enabled: false })).status).toBe(200);
      expect(await idpOf({ domain: 'eu.acme.test' })).toBe(acme.url);
      expect(await idpOf({ provider_id: euProvider })).toBe('404 sso_provider_not_found');
      expect((await owner('PATCH', `${providers()}/${acmeProvider}`, { enabled: false })).status).toBe(200);
      expect(await idpOf({ domain: 'eu.acme.test' })).toBe('404 sso_provider_not_found');
      await owner('PATCH', `${providers()}/${acmeProvider}`, { enabled: true });
      await owner('PATCH', `${providers()}/${euProvider}`, { enabled: true });
    });

    it('answers 404 for unknown domains and ids, and parents do not match children', async () => {
      expect(await idpOf({ domain: 'unknown.test' })).toBe('404 sso_provider_not_found');
      expect(await idpOf({ domain: 'test' })).toBe('404 sso_provider_not_found');
      expect(await idpOf({ domain: 'notacme.test' })).toBe('404 sso_provider_not_found');
      expect(await idpOf({ provider_id: '00000000-0000-4000-8000-000000000000' })).toBe('404 sso_provider_not_found');
      expect(await idpOf({ provider_id: 'not-a-uuid' })).toBe('404 sso_provider_not_found');
    });

    it('requires the anon key, and a plan with sso', async () => {
      const noKey = await authCall({ ...project, anonKey: 'anon_wrong' }, 'POST', '/sso', { domain: 'acme.test' });
      expect([noKey.status, noKey.body.code]).toEqual([401, 'invalid_api_key']);
      const free = await svc.project('free');
      const r = await startSignIn(free, { domain: 'acme.test' });
      expect([r.status, r.body.code]).toEqual([402, 'feature_not_in_plan']);
    });

    it('answers 303 to the IdP when the client does not ask to skip the redirect', async () => {
      const r = await authCall(project, 'POST', '/sso', { domain: 'acme.test', code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' });
      expect(r.status).toBe(303);
      expect(new URL(r.headers.get('location')!).origin).toBe(acme.url);
    });
  });

  describe('user resolution', () => {
    it('creates a user just in time with mapped claims and extra in user_metadata', async () => {
      const r = await signIn(acme, 'alice-1', 'alice@acme.test', { name: 'Alice Doe', picture: 'https://img.test/a.png', given_name: 'Alice', family_name: 'Doe', department: 'R&D' });
      expect(r.session).toMatchObject({ token_type: 'bearer', expires_in: 3600 });
      expect(r.user).toMatchObject({
        email: 'alice@acme.test',
        user_metadata: { name: 'Alice Doe', picture: 'https://img.test/a.png', first_name: 'Alice', last_name: 'Doe', dept: 'R&D' },
        app_metadata: { provider: `sso:${acmeProvider}` },
      });
      expect(r.user.email_confirmed_at).toBeTruthy();
      expect(r.user.identities).toHaveLength(1);
      expect(r.user.identities[0]).toMatchObject({ id: 'alice-1', provider: `sso:${acmeProvider}`, email: 'alice@acme.test' });
    });

    it('signs a known identity in as its user, even when its email has left the domains', async () => {
      const first = await signIn(acme, 'carol-1', 'carol@acme.test');
      const again = await signIn(acme, 'carol-1', 'carol@elsewhere.test');
      expect(again.user.id).toBe(first.user.id);
    });

    it('refuses an email outside the provider domains with email_domain_not_allowed', async () => {
      expect(await signIn(acme, 'mallory-1', 'mallory@evil.test')).toMatchObject({ error: 'email_domain_not_allowed' });
      // the eu provider's domains do not include the parent domain
      expect(await signIn(eu, 'mallory-2', 'mallory@acme.test')).toMatchObject({ error: 'email_domain_not_allowed' });
    });

    describe('linking an existing user with the same email', () => {
      it('refuses with email_exists when the project does not allow linking', async () => {
        await settings({ allow_linking: false });
        await localUser('dave@acme.test', true);
        expect(await signIn(acme, 'dave-1', 'dave@acme.test')).toMatchObject({ error: 'email_exists' });
      });

      it('links when linking is allowed, the IdP verified the email and the local email is verified', async () => {
        await settings({ allow_linking: true });
        const id = await localUser('erin@acme.test', true);
        const r = await signIn(acme, 'erin-1', 'erin@acme.test');
        expect(r.user.id).toBe(id);
        expect(r.user.identities.map((i: { id: string }) => i.id)).toEqual(['erin-1']);
      });

      it('refuses when the IdP does not assert the email verified, unless the provider has trust_email', async () => {
        await settings({ allow_linking: true });
        const id = await localUser('frank@acme.test', true);
        expect(await signIn(acme, 'frank-1', 'frank@acme.test', { email_verified: false })).toMatchObject({ error: 'email_exists' });
        await owner('PATCH', `${providers()}/${acmeProvider}`, { trust_email: true });
        try {
          const r = await signIn(acme, 'frank-1', 'frank@acme.test', { email_verified: false });
          expect(r.user.id).toBe(id);
        } finally {
          await owner('PATCH', `${providers()}/${acmeProvider}`, { trust_email: false });
        }
      });

      it('refuses when the local email is not verified', async () => {
        await settings({ allow_linking: true });
        await localUser('gina@acme.test', false);
        expect(await signIn(acme, 'gina-1', 'gina@acme.test')).toMatchObject({ error: 'email_exists' });
      });
    });

    it('refuses a new user with signup_disabled when jit is off or sign-ups are disabled', async () => {
      await owner('PATCH', `${providers()}/${acmeProvider}`, { jit: false });
      expect(await signIn(acme, 'hank-1', 'hank@acme.test')).toMatchObject({ error: 'signup_disabled' });
      await owner('PATCH', `${providers()}/${acmeProvider}`, { jit: true });
      await settings({ disable_signup: true });
      expect(await signIn(acme, 'hank-1', 'hank@acme.test')).toMatchObject({ error: 'signup_disabled' });
      await settings({ disable_signup: false });
      expect((await signIn(acme, 'hank-1', 'hank@acme.test')).user.email).toBe('hank@acme.test');
    });

    it('refuses a banned user with user_banned, and lets them in again once unbanned', async () => {
      const { user } = await signIn(acme, 'ivan-1', 'ivan@acme.test');
      const users = `/v1/projects/${project.ref}/auth/users/${user.id}`;
      expect((await owner('PATCH', users, { ban_duration: '24h' })).body.banned_until).toBeTruthy();
      const refused = await signIn(acme, 'ivan-1', 'ivan@acme.test');
      expect(refused).toMatchObject({ error: 'user_banned' });
      expect(refused.description).toBeTruthy();
      await owner('PATCH', users, { ban_duration: 'none' });
      expect((await signIn(acme, 'ivan-1', 'ivan@acme.test')).user.id).toBe(user.id);
    });

    it('returns failures to redirect_to with error and error_description', async () => {
      acme.setAccount('judy-1', { email: 'judy@evil.test', email_verified: true });
      const r = await signInThrough(acme, project, 'judy-1', { domain: 'acme.test' }, `${app}/after`);
      expect(r.landed.origin + r.landed.pathname).toBe(`${app}/after`);
      expect(r.landed.searchParams.get('error')).toBe('email_domain_not_allowed');
      expect(r.landed.searchParams.get('error_description')).toMatch(/evil\.test/);
      expect(r.code).toBeNull();
    });
  });
});
