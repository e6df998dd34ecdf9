// Rate limits of the public auth endpoints (AUTH_RATE_LIMIT_SSO, AUTH_RATE_LIMIT_TOKEN): per client
// address across projects, 429 rate_limited with Retry-After, the client IP taken from X-Forwarded-For only
// when the proxy is trusted (TRUST_PROXY). The sign-in limit is tested at its default.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authCall, pkcePair } from '../helpers/oidc-idp.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { supabaseClient } from '../helpers/supabase.js';

describe('rate limits of the public auth endpoints', () => {
  let svc: TestService;
  let untrusting: TestService;
  let project: TestProject;
  let other: TestProject;
  const start = (p: TestProject, headers: Record<string, string> = {}) => {
    const { challenge } = pkcePair();
    return authCall(p, 'POST', '/sso', { domain: 'nobody.test', skip_http_redirect: true, code_challenge: challenge, code_challenge_method: 's256' }, headers);
  };

  beforeAll(async () => {
    svc = await startTestService({ env: { AUTH_RATE_LIMIT_TOKEN: '3/1m' } });
    untrusting = await startTestService({ env: { TRUST_PROXY: 'false' } });
    project = await svc.project('enterprise');
    other = await svc.project('enterprise');
  });
  afterAll(async () => {
    await svc?.stop();
    await untrusting?.stop();
  });

  it('allows 30 sign-in starts per client in 5 minutes, then answers 429 rate_limited', async () => {
    expect(svc.cfg.AUTH_RATE_LIMIT_SSO).toEqual({ max: 30, windowMs: 300_000 });
    for (let i = 0; i < 30; i++) expect((await start(project)).status).toBe(404); // no provider for the domain: still counted
    const limited = await start(project);
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ code: 'rate_limited' });
    expect(limited.body.message).toMatch(/at most 30 in the window\); retry after \d+ (seconds|minutes)/);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);

    // supabase-js reports it as an error with the status
    const supabase = supabaseClient(project);
    const { error } = await supabase.auth.signInWithSSO({ domain: 'nobody.test' });
    expect(error?.status).toBe(429);

    // the budget is the client's, across projects (a ref in the path must not buy a fresh counter);
    // another client behind a trusted proxy (loopback) has its own
    expect((await start(other)).status).toBe(429);
    expect((await start(project, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(404);
    expect((await start(other, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(404);
  });

  it('does not take the client address from X-Forwarded-For when the proxy is not trusted', async () => {
    const p = await untrusting.project('enterprise');
    for (let i = 0; i < 30; i++) expect((await start(p, { 'x-forwarded-for': `198.51.100.${i}` })).status).toBe(404);
    expect((await start(p, { 'x-forwarded-for': '198.51.100.200' })).status).toBe(429);
  });

  it('limits POST /token too (here 3 a minute)', async () => {
    const refresh = () => authCall(project, 'POST', '/token?grant_type=refresh_token', { refresh_token: 'not-a-real-token-0123456789' });
    for (let i = 0; i < 3; i++) expect((await refresh()).status).toBe(400);
    const r = await refresh();
    expect(r.status).toBe(429);
    expect(r.body.code).toBe('rate_limited');
  });

  it('counts requests with a wrong API key too: the limit comes before the key check, so a flood of bad keys is limited', async () => {
    const limited = await startTestService({ env: { AUTH_RATE_LIMIT_TOKEN: '3/1m' } });
    try {
      const p = await limited.project('enterprise');
      const refresh = (apikey: string) => authCall(p, 'POST', '/token?grant_type=refresh_token', { refresh_token: 'not-a-real-token-0123456789' }, { apikey });
      for (let i = 0; i < 3; i++) expect((await refresh('anon_not-this-projects-key')).body.code).toBe('invalid_api_key');
      // the right key now finds the client's allowance spent by the wrong ones
      const r = await refresh(p.anonKey);
      expect(r.status).toBe(429);
      expect(r.body.code).toBe('rate_limited');
    } finally {
      await limited.stop();
    }
  });
});
