// What an SSO provider issued ends with it. Found by an attacker's review (2026-11-29): after the
// owner disabled a provider its unexchanged sign-in codes still became sessions, and after the
// owner deleted it (or put another IdP behind it) its sessions went on refreshing, 30 days past
// each refresh, for ever. Disabling, deleting or re-pointing a provider now revokes its sessions
// and burns its codes in the same transaction, and the exchange and the refresh refuse a provider
// that is no longer live (a sign-in that finished while the owner was disabling it). Another
// provider's sessions, in the same project, are left alone. Real oidc-provider IdPs throughout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { authCall, exchangeCode, signInThrough, startOidcIdp, type OidcIdp } from '../helpers/oidc-idp.js';

describe('an SSO provider disabled, deleted or given another IdP ends what it issued', () => {
  let svc: TestService;
  let p: TestProject;
  const idps: OidcIdp[] = [];
  const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
  const owner = (method: string, path: string, body?: unknown) => svc.api(p.ownerToken, method, `/v1/projects/${p.ref}${path}`, body);

  beforeAll(async () => {
    svc = await startTestService({ env: { AUTH_RATE_LIMIT_SSO: 'off', AUTH_RATE_LIMIT_TOKEN: 'off' } });
    p = await svc.project('enterprise', { siteUrl: 'http://localhost:3000' });
  });
  afterAll(async () => {
    for (const idp of idps) await idp.stop();
    await svc?.stop();
  });

  /** A provider of its own IdP for `domain`, with accounts a1..a4 there. */
  const provider = async (domain: string) => {
    const idp = await startOidcIdp({ redirectUris: [] });
    idps.push(idp);
    const r = await owner('POST', '/auth/providers/sso', { kind: 'oidc', name: domain, domains: [domain], issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    idp.allowRedirect(r.body.callback_url);
    for (const sub of ['a1', 'a2', 'a3', 'a4']) idp.setAccount(sub, { email: `${sub}@${domain}`, email_verified: true });
    return { id: r.body.id as string, idp, domain };
  };
  /** A sign-in through the provider up to its code (not exchanged). */
  const code = async (pv: { idp: OidcIdp; domain: string }, sub: string) => {
    const r = await signInThrough(pv.idp, p, sub, { domain: pv.domain });
    expect(r.code, r.landed.href).toBeTruthy();
    return { code: r.code!, verifier: r.verifier };
  };
  const session = async (pv: { idp: OidcIdp; domain: string }, sub: string) => {
    const c = await code(pv, sub);
    const s = await exchangeCode(p, c.code, c.verifier);
    expect(s.status, JSON.stringify(s.body)).toBe(200);
    return s.body as { access_token: string; refresh_token: string };
  };
  const refresh = (s: { refresh_token: string }) => authCall(p, 'POST', '/token?grant_type=refresh_token', { refresh_token: s.refresh_token });
  const lastAudit = async (action: string) => {
    const r = await owner('GET', '/audit?limit=50');
    return (r.body as { action: string; details: unknown }[]).find((e) => e.action === action)!;
  };

  it('disabling a provider revokes its sessions and burns its codes; re-enabling it brings none back; other providers untouched', async () => {
    const bystander = await provider('bystander.test');
    const kept = await session(bystander, 'a1');
    const pv = await provider('off.test');
    const live = await session(pv, 'a1');
    const pending = await code(pv, 'a2');

    const off = await owner('PATCH', `/auth/providers/sso/${pv.id}`, { enabled: false });
    expect(off.status).toBe(200);
    expect((await lastAudit('sso_provider.update')).details).toMatchObject({ sessions_revoked: 1 });

    expect(await refresh(live)).toMatchObject({ status: 400, body: { code: 'refresh_token_not_found' } });
    expect(await authCall(p, 'GET', '/user', undefined, bearer(live.access_token))).toMatchObject({ status: 401, body: { code: 'session_not_found' } });
    expect(await exchangeCode(p, pending.code, pending.verifier)).toMatchObject({ status: 404, body: { code: 'flow_state_not_found' } });

    expect((await owner('PATCH', `/auth/providers/sso/${pv.id}`, { enabled: true })).status).toBe(200);
    expect((await refresh(live)).status).toBe(400);
    // the other provider's session lives on
    expect((await refresh(kept)).status).toBe(200);
  });

  it('deleting a provider revokes its sessions', async () => {
    const pv = await provider('gone.test');
    const live = await session(pv, 'a1');
    expect((await owner('DELETE', `/auth/providers/sso/${pv.id}`)).status).toBe(200);
    expect((await lastAudit('sso_provider.delete')).details).toMatchObject({ sessions_revoked: 1 });
    expect(await refresh(live)).toMatchObject({ status: 400, body: { code: 'refresh_token_not_found' } });
    expect((await authCall(p, 'GET', '/user', undefined, bearer(live.access_token))).status).toBe(401);
  });

  it('another IdP behind a provider revokes the old IdP’s sessions', async () => {
    const pv = await provider('moved.test');
    const live = await session(pv, 'a1');
    const other = await startOidcIdp({ redirectUris: [] });
    idps.push(other);
    const moved = await owner('PATCH', `/auth/providers/sso/${pv.id}`, { issuer: other.issuer, client_id: other.clientId, client_secret: other.clientSecret });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect((await lastAudit('sso_provider.update')).details).toMatchObject({ identities_released: 1, sessions_revoked: 1 });
    expect((await refresh(live)).status).toBe(400);
    // a PATCH that changes nothing of the IdP (a name) ends nothing
    other.allowRedirect(moved.body.callback_url);
    other.setAccount('b1', { email: 'b1@moved.test', email_verified: true });
    const after = await session({ idp: other, domain: 'moved.test' }, 'b1');
    expect((await owner('PATCH', `/auth/providers/sso/${pv.id}`, { name: 'renamed' })).status).toBe(200);
    expect((await refresh(after)).status).toBe(200);
  });

  it('refuses a code or a refresh whose provider stopped being live behind the API’s back (a sign-in finishing during the disable)', async () => {
    const pv = await provider('race.test');
    const live = await session(pv, 'a1');
    const pending = await code(pv, 'a2');
    // as if the callback had issued the code (and the session) after the disabling transaction:
    // nothing was revoked or burnt, only the provider is off
    await svc.ctx.db.query('update sso_providers set enabled = false where id = $1', [pv.id]);
    expect(await exchangeCode(p, pending.code, pending.verifier)).toMatchObject({ status: 404, body: { code: 'flow_state_not_found' } });
    expect(await refresh(live)).toMatchObject({ status: 400, body: { code: 'refresh_token_not_found' } });
  });

  it('an access token of a session that has ended signs nothing out', async () => {
    const pv = await provider('logout.test');
    const ended = await session(pv, 'a3');
    const other = await session(pv, 'a3');
    expect((await authCall(p, 'POST', '/logout?scope=local', undefined, bearer(ended.access_token))).status).toBe(204);
    // its JWT is still valid until it expires; a global sign-out with it is refused
    expect(await authCall(p, 'POST', '/logout?scope=global', undefined, bearer(ended.access_token))).toMatchObject({ status: 401, body: { code: 'session_not_found' } });
    expect((await refresh(other)).status).toBe(200);
    // a live session still signs the user out everywhere
    const third = await session(pv, 'a3');
    expect((await authCall(p, 'POST', '/logout?scope=global', undefined, bearer(third.access_token))).status).toBe(204);
    expect((await refresh(other)).status).toBe(400);
  });
});
