// OIDC sign-in end to end against a real oidc-provider: domain routing and every branch of user
// resolution (spec section 5), through the service's public auth endpoints.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { exchangeCode, signInThrough, startOidcIdp, startSignIn, type OidcIdp } from '../helpers/oidc-idp.js';

describe('OIDC sign-in', () => {
  let svc: TestService;
  let project: TestProject;
  let idp: OidcIdp;
  let providerId: string;
  const app = 'http://localhost:3000';

  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.project('enterprise', { siteUrl: app });
    idp = await startOidcIdp({ redirectUris: [`${project.projectUrl}/auth/v1/sso/oidc/callback`], extraClaims: ['department'] });
    const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
      kind: 'oidc',
      name: 'Acme IdP',
      domains: ['Acme.test'],
      issuer: idp.issuer,
      client_id: idp.clientId,
      client_secret: idp.clientSecret,
      attribute_mapping: { extra: { dept: 'department' } },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    providerId = r.body.id;
  });
  afterAll(async () => {
    await idp?.stop();
    await svc?.stop();
  });

  it('signs a new user in just in time and returns a session auth-js accepts', async () => {
    idp.setAccount('alice-1', { email: 'alice@acme.test', email_verified: true, name: 'Alice Doe', picture: 'https://img.test/a.png', department: 'R&D' });
    const { landed, code, verifier } = await signInThrough(idp, project, 'alice-1', { email: 'alice@acme.test' }, `${app}/welcome`);
    expect(landed.origin + landed.pathname).toBe(`${app}/welcome`);
    expect(code).toBeTruthy();
    const s = await exchangeCode(project, code!, verifier);
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    expect(s.body).toMatchObject({ token_type: 'bearer', expires_in: 3600 });
    expect(s.body.user).toMatchObject({ email: 'alice@acme.test', user_metadata: { name: 'Alice Doe', picture: 'https://img.test/a.png', dept: 'R&D' } });
    expect(s.body.user.identities[0]).toMatchObject({ id: 'alice-1', provider: `sso:${providerId}` });
  });
});
