// The two clients a project's app would use, driven through a real OIDC sign-in: the unchanged
// @supabase/supabase-js client (signInWithSSO with skipBrowserRedirect, exchangeCodeForSession,
// then getUser, getClaims, refreshSession and signOut), and the project's own small client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { supabaseClient } from '../helpers/supabase.js';
import { arriveAt, startOidcIdp, type OidcIdp } from '../helpers/oidc-idp.js';

describe('SSO clients', () => {
  let svc: TestService;
  let project: TestProject;
  let idp: OidcIdp;
  let providerId: string;
  const redirectTo = 'http://app.test/auth/callback';

  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.project('enterprise', { siteUrl: 'http://app.test' });
    idp = await startOidcIdp({ redirectUris: [`${project.projectUrl}/auth/v1/sso/oidc/callback`] });
    idp.setAccount('sb-1', { email: 'sam@clients.test', email_verified: true, name: 'Sam' });
    idp.setAccount('own-1', { email: 'olga@clients.test', email_verified: true, name: 'Olga' });
    const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
      kind: 'oidc', name: 'Clients', domains: ['clients.test'], issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    idp.allowRedirect(r.body.callback_url);
    providerId = r.body.id;
  });
  afterAll(async () => {
    await idp?.stop();
    await svc?.stop();
  });

  it('completes a sign-in with @supabase/supabase-js unchanged', async () => {
    const supabase = supabaseClient(project);
    const { data, error } = await supabase.auth.signInWithSSO({ domain: 'clients.test', options: { redirectTo, skipBrowserRedirect: true } });
    expect(error).toBeNull();
    const landed = await arriveAt(await idp.login(data!.url, 'sb-1'));
    expect(landed.origin + landed.pathname).toBe(redirectTo);

    const exchanged = await supabase.auth.exchangeCodeForSession(landed.searchParams.get('code')!);
    expect(exchanged.error).toBeNull();
    expect(exchanged.data.session?.user.email).toBe('sam@clients.test');
    expect(exchanged.data.user?.identities?.[0]).toMatchObject({ id: 'sb-1', provider: `sso:${providerId}` });

    const me = await supabase.auth.getUser();
    expect(me.error).toBeNull();
    expect(me.data.user?.id).toBe(exchanged.data.user?.id);
    const claims = await supabase.auth.getClaims();
    expect(claims.error).toBeNull();
    expect(claims.data?.claims).toMatchObject({ sub: exchanged.data.user?.id, role: 'authenticated', aud: 'authenticated' });

    const refreshed = await supabase.auth.refreshSession();
    expect(refreshed.error).toBeNull();
    expect(refreshed.data.session?.refresh_token).not.toBe(exchanged.data.session?.refresh_token);

    expect((await supabase.auth.signOut()).error).toBeNull();
    const after = await fetch(`${project.projectUrl}/auth/v1/user`, { headers: { apikey: project.anonKey, authorization: `Bearer ${refreshed.data.session!.access_token}` } });
    expect((await after.json()).code).toBe('session_not_found');
  });

  it('surfaces service errors through supabase-js with their codes', async () => {
    const supabase = supabaseClient(project);
    const { data, error } = await supabase.auth.signInWithSSO({ domain: 'nobody.test', options: { skipBrowserRedirect: true } });
    expect(data).toBeNull();
    expect(error).toMatchObject({ status: 404, code: 'sso_provider_not_found' });
    // with a verifier stored, a code the service never issued is refused by the service
    const started = await supabase.auth.signInWithSSO({ domain: 'clients.test', options: { skipBrowserRedirect: true } });
    expect(started.error).toBeNull();
    const bad = await supabase.auth.exchangeCodeForSession('no-such-code');
    expect(bad.error).toMatchObject({ status: 404, code: 'flow_state_not_found' });
  });

  it("completes a sign-in with the project's own client", async () => {
    const client = createClient(project.projectUrl, project.anonKey);
    const started = await client.auth.signInWithSSO({ email: 'olga@clients.test', redirectTo, skipBrowserRedirect: true });
    expect(started.error).toBeNull();
    const landed = await arriveAt(await idp.login(started.data!.url, 'own-1'));
    const { data, error } = await client.auth.exchangeCodeForSession(landed.searchParams.get('code')!);
    expect(error).toBeNull();
    expect(data!.session).toMatchObject({ token_type: 'bearer', user: { email: 'olga@clients.test' } });

    const missing = await client.auth.signInWithSSO({ providerId: '00000000-0000-4000-8000-000000000000', skipBrowserRedirect: true });
    expect(missing).toEqual({ data: null, error: { code: 'sso_provider_not_found', message: expect.any(String), status: 404 } });
    const reused = await client.auth.exchangeCodeForSession(landed.searchParams.get('code')!);
    expect(reused.error?.code).toBe('pkce_verifier_missing');
  });

  it('navigates the browser unless asked to return the URL', async () => {
    const visited: string[] = [];
    const client = createClient(project.projectUrl, project.anonKey, { navigate: (url) => visited.push(url) });
    const r = await client.auth.signInWithSSO({ domain: 'clients.test' });
    expect(visited).toEqual([r.data!.url]);
    expect(new URL(visited[0]).origin).toBe(idp.url);
  });
});
