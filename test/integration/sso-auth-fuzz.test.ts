// Property-based fuzzing of the public auth API (/projects/{ref}/auth/v1/...), the part of the
// service anyone on the internet can reach with the public anon key. Each request starts from a
// valid call and breaks one thing (a text field with NUL / surrogates / CR-LF, a field of the wrong
// type, a huge value, an unknown field, broken JSON, the API key, the ref, the query, the bearer
// token, the OIDC callback's or SAML ACS's parameters). The answer must never be a 5xx: a 4xx with
// {code, message} from the error catalogue, or, for the browser-facing callback and ACS, a redirect.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogue } from '../../src/errors.js';
import { pkcePair, startOidcIdp, type OidcIdp } from '../helpers/oidc-idp.js';
import { badChar, insertAt, oddString as oddStringOf, wrongFor, type Req } from '../helpers/fuzz.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';

const oddString = oddStringOf(['\u0000', '%00', '../..', '__proto__', ' ', '"', '\\', 'null', '\ud800', 'javascript:alert(1)', '//evil.test', 'http://evil.test/']);
const huge = fc.tuple(fc.integer({ min: 5_000, max: 70_000 }), fc.constantFrom('x', 'é', '\u0001', '𝕏', '%')).map(([n, c]) => c.repeat(n));
// auth-js sends these as null when it has none
const NULLABLE = ['code_challenge', 'code_challenge_method'];
// a path can only carry well-formed text: lone surrogates become U+FFFD, as a browser would send
const wellFormed = (s: string) => s.replace(/[\ud800-\udfff]/gu, '\ufffd');

describe('public auth API fuzz: malformed requests never get a 5xx', () => {
  let svc: TestService;
  let project: TestProject;
  let idp: OidcIdp;
  let samlProviderId: string;

  beforeAll(async () => {
    svc = await startTestService({ env: { AUTH_RATE_LIMIT_SSO: 'off', AUTH_RATE_LIMIT_TOKEN: 'off' } });
    project = await svc.project('enterprise', { siteUrl: 'http://app.test' });
    idp = await startOidcIdp({ redirectUris: [`${project.projectUrl}/auth/v1/sso/oidc/callback`] });
    const oidc = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
      kind: 'oidc', name: 'Fuzz', domains: ['fuzz.test'], issuer: idp.issuer, client_id: idp.clientId, client_secret: idp.clientSecret,
    });
    expect(oidc.status, JSON.stringify(oidc.body)).toBe(201);
    idp.allowRedirect(oidc.body.callback_url);
    const saml = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
      kind: 'saml', name: 'Fuzz SAML', domains: ['saml-fuzz.test'],
      metadata_xml: `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.fuzz.test"><IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.fuzz.test/sso"/></IDPSSODescriptor></EntityDescriptor>`,
    });
    samlProviderId = saml.status === 201 ? saml.body.id : '00000000-0000-4000-8000-000000000000';
  });
  afterAll(async () => {
    await idp?.stop();
    await svc?.stop();
  });

  function requests() {
    const { challenge, verifier } = pkcePair();
    const key = { apikey: project.anonKey };
    const json = { ...key, 'content-type': 'application/json' };
    const auth = (p: string) => `/projects/${project.ref}/auth/v1${p}`;
    const bodies: { path: string; body: Record<string, unknown> }[] = [
      { path: '/sso', body: { domain: 'fuzz.test', redirect_to: 'http://app.test/cb', skip_http_redirect: true, code_challenge: challenge, code_challenge_method: 's256' } },
      { path: '/sso', body: { email: 'ann@fuzz.test', skip_http_redirect: true, code_challenge: challenge, code_challenge_method: 's256' } },
      { path: '/token?grant_type=pkce', body: { auth_code: '7b0d6f0e-3c55-4d1b-9a57-1f0f0b6c2c11', code_verifier: verifier } },
      { path: '/token?grant_type=refresh_token', body: { refresh_token: 'rt_abcdefghijklmnopqrstuvwxyz' } },
    ];
    const post = (b: (typeof bodies)[number], body: string, headers: Record<string, string> = json): Req => ({ kind: '', method: 'POST', path: auth(b.path), headers, body });
    const tag = (kind: string) => (q: Req) => ({ ...q, kind });
    const withBody = fc.constantFrom(...bodies);
    const field = (b: (typeof bodies)[number]) => fc.constantFrom(...Object.keys(b.body));

    const badText = withBody
      .chain((b) => fc.tuple(fc.constantFrom(...Object.keys(b.body).filter((k) => typeof b.body[k] === 'string')), badChar, fc.nat()).map(([k, c, at]) => post(b, JSON.stringify({ ...b.body, [k]: insertAt(b.body[k] as string, c, at) }))))
      .map(tag('bad text'));
    const wrongType = withBody
      .chain((b) => field(b).chain((k) => wrongFor(b.body[k]).filter((v) => !(v === null && NULLABLE.includes(k))).map((v) => post(b, JSON.stringify({ ...b.body, [k]: v })))))
      .map(tag('wrong type'));
    const hugeValue = withBody.chain((b) => fc.tuple(field(b), huge).map(([k, s]) => post(b, JSON.stringify({ ...b.body, [k]: s })))).map(tag('huge'));
    const unknownField = withBody
      .chain((b) => fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !(k in b.body) && !['provider_id', 'domain', 'email', 'redirect_to', 'skip_http_redirect', 'code_challenge', 'code_challenge_method', 'gotrue_meta_security', 'auth_code', 'code_verifier', 'refresh_token'].includes(k)).map((k) => post(b, JSON.stringify({ ...b.body, [k]: 1 }))))
      .map(tag('unknown field'));
    const badJson = fc
      .tuple(withBody, fc.constantFrom('{', '{"a":1,}', "{'a':1}", 'NaN', '[1,]', '\u0000', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}'))
      .map(([b, text]) => post(b, text))
      .map(tag('bad JSON'));
    const badKey = fc
      .tuple(withBody, fc.oneof(fc.constant(undefined), oddString.filter((s) => /^[\t\x20-\x7e]*$/.test(s))))
      .map(([b, k]) => post(b, JSON.stringify(b.body), k === undefined ? { 'content-type': 'application/json' } : { apikey: k, 'content-type': 'application/json' }))
      .map(tag('bad api key'));
    const badRef = fc
      .tuple(withBody, oddString.filter((r) => r !== '' && r !== '.' && r !== '..'))
      .map(([b, ref]) => ({ ...post(b, JSON.stringify(b.body)), path: `/projects/${encodeURIComponent(wellFormed(ref))}/auth/v1${b.path}` }))
      .map(tag('bad ref'));
    const badGrant = fc
      .tuple(fc.constantFrom(...bodies.filter((b) => b.path.startsWith('/token'))), oddString)
      .map(([b, g]) => ({ ...post(b, JSON.stringify(b.body)), path: auth(`/token?grant_type=${encodeURIComponent(wellFormed(g))}`) }))
      .map(tag('bad grant'));
    const badBearer = fc
      .tuple(fc.constantFrom('GET /user', 'POST /logout'), oddString.filter((s) => /^[\t\x20-\x7e]*$/.test(s)))
      .map(([route, t]): Req => {
        const [method, p] = route.split(' ');
        return { kind: '', method, path: auth(p), headers: { ...key, authorization: `Bearer ${t}` } };
      })
      .map(tag('bad bearer'));
    // The browser-facing endpoints answer a broken request with a redirect (to the app, with
    // ?error=) or a 4xx page; never a 5xx.
    const badCallback = fc
      .tuple(fc.oneof(oddString, huge.map((s) => s.slice(0, 4000))), fc.oneof(oddString, fc.constant(undefined)), fc.oneof(oddString, fc.constant(undefined)))
      .map(([state, code, error]): Req => {
        const q = new URLSearchParams({ state, ...(code !== undefined && { code }), ...(error !== undefined && { error }) });
        return { kind: '', method: 'GET', path: `${auth('/sso/oidc/callback')}?${q}`, headers: {} };
      })
      .map(tag('oidc callback'));
    const badAcs = fc
      .tuple(fc.oneof(oddString, fc.base64String({ maxLength: 400 }), huge.map((s) => s.slice(0, 20_000))), fc.oneof(oddString, fc.constant(undefined)), fc.constantFrom(samlProviderId, 'not-a-uuid', '00000000-0000-4000-8000-000000000000'))
      .map(([response, relay, id]): Req => ({
        kind: '',
        method: 'POST',
        path: auth(`/sso/saml/acs/${id}`),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ SAMLResponse: response, ...(relay !== undefined && { RelayState: relay }) }).toString(),
      }))
      .map(tag('saml acs'));
    return fc.oneof(badText, wrongType, hugeValue, unknownField, badJson, badKey, badRef, badGrant, badBearer, badCallback, badAcs);
  }

  it('answers 1000 malformed requests with a 4xx {code, message} or a redirect, never a 5xx', async () => {
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(requests(), async (q) => {
        seen.set(q.kind, (seen.get(q.kind) ?? 0) + 1);
        const res = await fetch(`${svc.url}${q.path}`, { method: q.method, headers: q.headers, body: q.body, redirect: 'manual' });
        const text = await res.text();
        const where = `${q.kind}: ${q.method} ${q.path.slice(0, 160)} ${(q.body ?? '').slice(0, 160)} -> ${res.status} ${text.slice(0, 200)}`;
        expect(res.status, where).toBeLessThan(500);
        if (res.status >= 300 && res.status < 400) {
          expect(q.kind === 'oidc callback' || q.kind === 'saml acs', where).toBe(true);
          expect(res.headers.get('location'), where).toBeTruthy();
          return;
        }
        expect(res.status, where).toBeGreaterThanOrEqual(400);
        expect(res.headers.get('content-type'), where).toMatch(/^application\/json/);
        const body = JSON.parse(text);
        expect(Object.keys(catalogue), where).toContain(body.code);
        expect(typeof body.message, where).toBe('string');
      }),
      { numRuns: 1100 },
    );
    expect([...seen.values()].reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1000);
    expect(seen.size).toBe(11);
  }, 240_000);
});
