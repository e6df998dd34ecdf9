// What an attacker (or an unlucky browser) could try on the OIDC path: replayed state, nonce and
// codes, a wrong PKCE verifier, expired flows and codes, open redirects; and the session
// lifecycle: rotation, reuse detection, sign-out, and access tokens verifiable with the JWKS.
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { arriveAt, authCall, exchangeCode, pkcePair, signInThrough, startOidcIdp, startSignIn, type OidcIdp } from '../helpers/oidc-idp.js';

describe('OIDC sign-in: replay, PKCE, expiry, redirects and sessions', () => {
  let svc: TestService;
  let project: TestProject;
  let idp: OidcIdp;
  const app = 'http://localhost:3000';
  const selector = { domain: 'corp.test' };

  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.project('enterprise', { siteUrl: app, redirectUrls: ['http://app.test/callback', 'http://*.preview.test/**'] });
    idp = await startOidcIdp({ redirectUris: [`${project.projectUrl}/auth/v1/sso/oidc/callback`] });
    const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
      kind: 'oidc', name: 'Corp', domains: ['corp.test'], issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    idp.allowRedirect(r.body.callback_url);
    for (const sub of ['u1', 'u2', 'u3', 'u4', 'u5', 'u6']) idp.setAccount(sub, { email: `${sub}@corp.test`, email_verified: true });
  });
  afterAll(async () => {
    await idp?.stop();
    await svc?.stop();
  });

  const session = async (sub: string) => {
    const r = await signInThrough(idp, project, sub, selector);
    const s = await exchangeCode(project, r.code!, r.verifier);
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    return s.body;
  };

  it('refuses a replayed IdP answer (state already used)', async () => {
    const started = await startSignIn(project, selector);
    const callback = await idp.login(started.url!, 'u1');
    expect((await arriveAt(callback)).searchParams.get('code')).toBeTruthy();
    const replay = await arriveAt(callback);
    expect(replay.searchParams.get('error')).toBe('flow_state_not_found');
    expect(replay.searchParams.get('code')).toBeNull();
  });

  it('refuses an answer with a state it never issued', async () => {
    const started = await startSignIn(project, selector);
    const callback = new URL(await idp.login(started.url!, 'u1'));
    callback.searchParams.set('state', 'forged-state-value');
    expect((await arriveAt(callback.href)).searchParams.get('error')).toBe('flow_state_not_found');
  });

  it("refuses an ID token carrying another flow's nonce", async () => {
    const a = await startSignIn(project, selector);
    const b = await startSignIn(project, selector);
    // the IdP is asked, for flow b, to put flow a's nonce in the ID token
    const tampered = new URL(b.url!);
    tampered.searchParams.set('nonce', new URL(a.url!).searchParams.get('nonce')!);
    const landed = await arriveAt(await idp.login(tampered.href, 'u2'));
    expect(landed.searchParams.get('error')).toBe('sso_failed');
    expect(landed.searchParams.get('error_description')).toMatch(/nonce/);
    expect(landed.searchParams.get('code')).toBeNull();
  });

  it('refuses an answer whose iss parameter is not the issuer', async () => {
    const started = await startSignIn(project, selector);
    const callback = new URL(await idp.login(started.url!, 'u1'));
    expect(callback.searchParams.get('iss')).toBe(idp.issuer);
    callback.searchParams.set('iss', 'https://evil.test');
    const landed = await arriveAt(callback.href);
    expect(landed.searchParams.get('error')).toBe('sso_failed');
    expect(landed.searchParams.get('code')).toBeNull();
  });

  it('returns an IdP refusal (the user cancelled) as sso_failed', async () => {
    const started = await startSignIn(project, selector, 'http://app.test/callback');
    const landed = await arriveAt(await idp.login(started.url!, 'u1', { cancel: true }));
    expect(landed.href.startsWith('http://app.test/callback?')).toBe(true);
    expect(landed.searchParams.get('error')).toBe('sso_failed');
    expect(landed.searchParams.get('error_description')).toMatch(/access_denied/);
  });

  it('answers CORS preflights so browser apps can call the endpoints', async () => {
    const pre = await fetch(`${project.projectUrl}/auth/v1/token?grant_type=pkce`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.test', 'access-control-request-method': 'POST', 'access-control-request-headers': 'apikey, content-type' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    expect(pre.headers.get('access-control-allow-headers')).toContain('apikey');
  });

  it('authenticates to the IdP with the client secret: a wrong one fails the sign-in', async () => {
    const other = await svc.project('enterprise', { siteUrl: app });
    const wrongIdp = await startOidcIdp({ redirectUris: [`${other.projectUrl}/auth/v1/sso/oidc/callback`] });
    try {
      const created = await svc.api(other.ownerToken, 'POST', `/v1/projects/${other.ref}/auth/providers/sso`, {
        kind: 'oidc', name: 'Wrong secret', domains: ['corp.test'], issuer: wrongIdp.issuer, client_id: wrongIdp.clientId, client_secret: 'not-the-secret',
      });
      expect(created.status).toBe(201);
      wrongIdp.allowRedirect(created.body.callback_url);
      wrongIdp.setAccount('w1', { email: 'w1@corp.test', email_verified: true });
      const r = await signInThrough(wrongIdp, other, 'w1', selector);
      expect(r.error).toBe('sso_failed');
      expect(r.landed.searchParams.get('error_description')).toMatch(/invalid_client/);
    } finally {
      await wrongIdp.stop();
    }
  });

  it('refuses to finish a sign-in whose provider was disabled meanwhile', async () => {
    const providers = await svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/auth/providers/sso`);
    const id = providers.body.items[0].id;
    const started = await startSignIn(project, selector);
    const callback = await idp.login(started.url!, 'u1');
    await svc.api(project.ownerToken, 'PATCH', `/v1/projects/${project.ref}/auth/providers/sso/${id}`, { enabled: false });
    try {
      expect((await arriveAt(callback)).searchParams.get('error')).toBe('sso_provider_not_found');
    } finally {
      await svc.api(project.ownerToken, 'PATCH', `/v1/projects/${project.ref}/auth/providers/sso/${id}`, { enabled: true });
    }
  });

  it('accepts a sign-in code once only', async () => {
    const r = await signInThrough(idp, project, 'u1', selector);
    expect((await exchangeCode(project, r.code!, r.verifier)).status).toBe(200);
    const again = await exchangeCode(project, r.code!, r.verifier);
    expect([again.status, again.body.code]).toEqual([404, 'flow_state_not_found']);
  });

  it('refuses a wrong code verifier, and the code is spent afterwards', async () => {
    const r = await signInThrough(idp, project, 'u1', selector);
    const wrong = await exchangeCode(project, r.code!, pkcePair().verifier);
    expect([wrong.status, wrong.body.code]).toEqual([400, 'bad_code_verifier']);
    expect((await exchangeCode(project, r.code!, r.verifier)).body.code).toBe('flow_state_not_found');
  });

  it('refuses an expired flow and an expired code', async () => {
    const started = await startSignIn(project, selector, 'http://app.test/callback');
    await svc.ctx.db.query(`update sso_flows set expires_at = now() - interval '1 second' where project_ref = $1 and consumed_at is null`, [project.ref]);
    const landed = await arriveAt(await idp.login(started.url!, 'u3'));
    expect(landed.href.startsWith('http://app.test/callback?')).toBe(true);
    expect(landed.searchParams.get('error')).toBe('flow_state_expired');

    const r = await signInThrough(idp, project, 'u3', selector);
    await svc.ctx.db.query(`update auth_codes set expires_at = now() - interval '1 second' where project_ref = $1 and consumed_at is null`, [project.ref]);
    const late = await exchangeCode(project, r.code!, r.verifier);
    expect([late.status, late.body.code]).toEqual([400, 'flow_state_expired']);
  });

  it('never redirects outside the allowed redirect URLs', async () => {
    const land = async (redirectTo: string) => {
      const r = await signInThrough(idp, project, 'u4', selector, redirectTo);
      expect(r.code).toBeTruthy();
      return r.landed.origin + r.landed.pathname;
    };
    expect(await land('https://evil.test/steal')).toBe(`${app}/`);
    expect(await land('http://evil.test/x?next=.preview.test/')).toBe(`${app}/`);
    expect(await land('http://app.test.evil.test/callback')).toBe(`${app}/`);
    expect(await land('javascript:alert(1)//app.test/callback')).toBe(`${app}/`);
    expect(await land('http://app.test/callback')).toBe('http://app.test/callback');
    expect(await land('http://pr-7.preview.test/auth/done')).toBe('http://pr-7.preview.test/auth/done');
    expect(await land(`${app}/dashboard`)).toBe(`${app}/dashboard`);
  });

  it('answers malformed requests with a 4xx and a catalogue code, never a 5xx', async () => {
    const raw = async (method: string, path: string, body?: string, headers: Record<string, string> = {}) => {
      const res = await fetch(`${project.projectUrl}/auth/v1${path}`, { method, redirect: 'manual', headers: { apikey: project.anonKey, 'content-type': 'application/json', ...headers }, body });
      return { status: res.status, body: res.status === 303 ? null : await res.json() };
    };
    const cases: [string, string, string?, Record<string, string>?][] = [
      ['POST', '/sso', '[]'],
      ['POST', '/sso', '"text"'],
      ['POST', '/sso', '{"domain": 5}'],
      ['POST', '/sso', '{"domain":"corp.test"'],
      ['POST', '/sso', JSON.stringify({ domain: 'corp.test', email: 'a@corp.test', code_challenge: 'x'.repeat(43) })],
      ['POST', '/sso', JSON.stringify({ domain: 'corp.test', code_challenge: 'short', code_challenge_method: 's256' })],
      ['POST', '/sso', JSON.stringify({ domain: 'corp.test', code_challenge: 'x'.repeat(43), code_challenge_method: 'md5' })],
      ['POST', '/token?grant_type=password', '{}'],
      ['POST', '/token', '{}'],
      ['POST', '/token?grant_type=pkce', '{}'],
      ['POST', '/token?grant_type=pkce', JSON.stringify({ auth_code: 'x', code_verifier: 'y'.repeat(300) })],
      ['POST', '/token?grant_type=refresh_token', ''],
      ['GET', '/user', undefined, { authorization: 'Bearer not.a.jwt' }],
      ['GET', '/user', undefined, { authorization: 'Basic abc' }],
      ['POST', '/logout?scope=everyone', undefined, { authorization: 'Bearer x' }],
      ['GET', '/sso/oidc/callback?state=a&state=b'],
      ['GET', '/sso/oidc/callback?code=x'],
    ];
    for (const [method, path, body, headers] of cases) {
      const r = await raw(method, path, body, headers);
      const label = `${method} ${path} ${body ?? ''}`;
      if (r.status === 303) continue; // the callback answers the browser with a redirect
      expect(r.status, label).toBeGreaterThanOrEqual(400);
      expect(r.status, label).toBeLessThan(500);
      expect(typeof r.body.code, label).toBe('string');
    }
  });

  it('requires PKCE from the client', async () => {
    const r = await authCall(project, 'POST', '/sso', { ...selector, skip_http_redirect: true, code_challenge: null, code_challenge_method: null });
    expect([r.status, r.body.code]).toEqual([400, 'validation_failed']);
  });

  it('rotates refresh tokens and revokes the session when an old one is reused', async () => {
    const first = await session('u5');
    const second = await authCall(project, 'POST', '/token?grant_type=refresh_token', { refresh_token: first.refresh_token });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    expect(second.body.user.id).toBe(first.user.id);
    const bearer = (s: { access_token: string }) => ({ authorization: `Bearer ${s.access_token}` });
    expect((await authCall(project, 'GET', '/user', undefined, bearer(second.body))).status).toBe(200);

    const reuse = await authCall(project, 'POST', '/token?grant_type=refresh_token', { refresh_token: first.refresh_token });
    expect([reuse.status, reuse.body.code]).toEqual([400, 'refresh_token_already_used']);
    // the whole session is gone: the newest refresh token and its access token too
    const next = await authCall(project, 'POST', '/token?grant_type=refresh_token', { refresh_token: second.body.refresh_token });
    expect([next.status, next.body.code]).toEqual([400, 'refresh_token_not_found']);
    const me = await authCall(project, 'GET', '/user', undefined, bearer(second.body));
    expect([me.status, me.body.code]).toEqual([401, 'session_not_found']);
    const unknown = await authCall(project, 'POST', '/token?grant_type=refresh_token', { refresh_token: 'not-a-token' });
    expect([unknown.status, unknown.body.code]).toEqual([400, 'refresh_token_not_found']);
  });

  it('issues ES256 access tokens verifiable with the JWKS, ended by logout', async () => {
    const s = await session('u6');
    const jwks = createRemoteJWKSet(new URL(`${project.projectUrl}/auth/v1/.well-known/jwks.json`), { headers: { apikey: project.anonKey } });
    const { payload, protectedHeader } = await jwtVerify(s.access_token, jwks, { audience: 'authenticated', issuer: `${project.projectUrl}/auth/v1` });
    expect(protectedHeader.alg).toBe('ES256');
    expect(payload).toMatchObject({ sub: s.user.id, role: 'authenticated', email: 'u6@corp.test', amr: [{ method: 'sso/oidc' }] });
    expect(payload.exp! - payload.iat!).toBe(3600);
    expect(s.expires_at).toBe(payload.exp);

    const auth = { authorization: `Bearer ${s.access_token}` };
    const me = await authCall(project, 'GET', '/user', undefined, auth);
    expect(me.body).toMatchObject({ id: s.user.id, email: 'u6@corp.test' });
    const bad = await authCall(project, 'GET', '/user', undefined, { authorization: `Bearer ${s.access_token.slice(0, -4)}AAAA` });
    expect([bad.status, bad.body.code]).toEqual([401, 'bad_jwt']);
    const out = await fetch(`${project.projectUrl}/auth/v1/logout?scope=local`, { method: 'POST', headers: { ...auth, apikey: project.anonKey, 'content-type': 'application/json' } });
    expect(out.status).toBe(204);
    expect((await authCall(project, 'GET', '/user', undefined, auth)).body.code).toBe('session_not_found');
    const refresh = await authCall(project, 'POST', '/token?grant_type=refresh_token', { refresh_token: s.refresh_token });
    expect(refresh.body.code).toBe('refresh_token_not_found');
  });
});
