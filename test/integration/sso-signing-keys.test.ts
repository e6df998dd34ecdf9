// Rotating a project's access-token signing key: signed-in users stay signed in (their token keeps
// verifying, through /user and through the JWKS that @supabase/supabase-js's getClaims reads), the
// next refresh is signed by the new key, and the old key leaves the JWKS once tokens it signed have
// expired. Driven with the unchanged supabase-js client against a real OIDC IdP.
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arriveAt, startOidcIdp, type OidcIdp } from '../helpers/oidc-idp.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { supabaseClient } from '../helpers/supabase.js';

describe('access-token signing key rotation', () => {
  let svc: TestService;
  let project: TestProject;
  let idp: OidcIdp;
  const keysPath = () => `/v1/projects/${project.ref}/auth/signing-keys`;
  const user = (token: string) => fetch(`${project.projectUrl}/auth/v1/user`, { headers: { apikey: project.anonKey, authorization: `Bearer ${token}` } });
  const jwksKids = async () => ((await (await fetch(`${project.projectUrl}/auth/v1/.well-known/jwks.json`, { headers: { apikey: project.anonKey } })).json()).keys as { kid: string }[]).map((k) => k.kid);

  async function signIn() {
    const client = supabaseClient(project);
    const { data } = await client.auth.signInWithSSO({ domain: 'keys.test', options: { redirectTo: 'http://app.test/cb', skipBrowserRedirect: true } });
    const landed = await arriveAt(await idp.login(data!.url, 'kim-1'));
    const { data: s, error } = await client.auth.exchangeCodeForSession(landed.searchParams.get('code')!);
    expect(error).toBeNull();
    return { client, token: s.session!.access_token };
  }

  beforeAll(async () => {
    svc = await startTestService();
    project = await svc.project('enterprise', { siteUrl: 'http://app.test' });
    idp = await startOidcIdp({ redirectUris: [`${project.projectUrl}/auth/v1/sso/oidc/callback`] });
    idp.setAccount('kim-1', { email: 'kim@keys.test', email_verified: true });
    const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
      kind: 'oidc', name: 'Keys', domains: ['keys.test'], issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    idp.allowRedirect(r.body.callback_url);
  });
  afterAll(async () => {
    await idp?.stop();
    await svc?.stop();
  });

  it('keeps signed-in users signed in, signs new tokens with the new key, and retires the old one after the token lifetime', async () => {
    const before = await svc.api(project.ownerToken, 'GET', keysPath());
    expect(before.status).toBe(200);
    expect(before.body.keys).toHaveLength(1);
    const oldKid = before.body.keys[0].kid;
    expect(before.body.keys[0]).toMatchObject({ status: 'current', valid_until: null, public_jwk: { kid: oldKid, kty: 'EC', crv: 'P-256' } });
    expect(before.body.keys[0].public_jwk.d).toBeUndefined();

    const { client, token: oldToken } = await signIn();
    expect(decodeProtectedHeader(oldToken).kid).toBe(oldKid);

    const rotatedAt = Date.now();
    const rotated = await svc.api(project.ownerToken, 'POST', `${keysPath()}/rotate`);
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const [current, previous] = rotated.body.keys;
    expect(current.status).toBe('current');
    expect(current.kid).not.toBe(oldKid);
    expect(previous).toMatchObject({ kid: oldKid, status: 'previous' });
    // valid as long as a token it signed can be: ACCESS_TOKEN_TTL (1 h) plus a minute of skew
    const validFor = Date.parse(previous.valid_until) - rotatedAt;
    expect(validFor).toBeGreaterThan(svc.cfg.ACCESS_TOKEN_TTL);
    expect(validFor).toBeLessThan(svc.cfg.ACCESS_TOKEN_TTL + 120_000);
    expect(JSON.stringify(rotated.body)).not.toMatch(/"d":/);

    // the signed-in user is still signed in, and the old token still verifies against the JWKS
    expect((await user(oldToken)).status).toBe(200);
    expect(await jwksKids()).toEqual([current.kid, oldKid]);
    const claims = await client.auth.getClaims();
    expect(claims.error).toBeNull();
    expect(claims.data?.claims.email).toBe('kim@keys.test');

    // the next refresh is signed by the new key, and verifies too
    const refreshed = await client.auth.refreshSession();
    expect(refreshed.error).toBeNull();
    const newToken = refreshed.data.session!.access_token;
    expect(decodeProtectedHeader(newToken).kid).toBe(current.kid);
    expect((await user(newToken)).status).toBe(200);
    expect((await client.auth.getClaims()).error).toBeNull();

    // once the old key's validity has passed (moved into the past here rather than waited for),
    // it leaves the JWKS and tokens it signed are refused
    await svc.ctx.db.query(
      `update projects set jwt_previous_keys = jsonb_set(jwt_previous_keys, '{0,valid_until}', to_jsonb((now() - interval '1 second')::text)) where ref = $1`,
      [project.ref],
    );
    expect(await jwksKids()).toEqual([current.kid]);
    const refused = await user(oldToken);
    expect(refused.status).toBe(401);
    expect((await refused.json()).code).toBe('bad_jwt');
    expect((await user(newToken)).status).toBe(200);
    expect((await svc.api(project.ownerToken, 'GET', keysPath())).body.keys.map((k: { kid: string }) => k.kid)).toEqual([current.kid]);

    const audit = await svc.api(project.ownerToken, 'GET', `/v1/projects/${project.ref}/audit?limit=100`);
    const entry = audit.body.find((e: { action: string }) => e.action === 'auth.signing_key.rotate');
    expect(entry).toMatchObject({ resource_type: 'signing_key', resource_id: current.kid, details: { previous_kid: oldKid } });
  });

  it('keeps every key still within its validity across rotations in a row', async () => {
    const first = (await svc.api(project.ownerToken, 'POST', `${keysPath()}/rotate`)).body.keys;
    const second = (await svc.api(project.ownerToken, 'POST', `${keysPath()}/rotate`)).body.keys;
    expect(second.map((k: { status: string }) => k.status)).toEqual(['current', 'previous', 'previous']);
    expect(second[1].kid).toBe(first[0].kid);
    expect(second[2].kid).toBe(first[1].kid);
    expect(await jwksKids()).toEqual(second.map((k: { kid: string }) => k.kid));
  });

  it('is for the project owner only', async () => {
    const other = await svc.project('enterprise');
    expect((await svc.api(other.ownerToken, 'POST', `${keysPath()}/rotate`)).status).toBe(404);
    expect((await svc.api(null, 'GET', keysPath())).status).toBe(401);
    const body = await svc.api(project.ownerToken, 'POST', `${keysPath()}/rotate`, { kid: 'mine' });
    expect(body.status).toBe(400);
  });
});
