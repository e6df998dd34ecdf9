// Every attack the SAML ACS's checks stop (docs/sso-saml.md, "What the ACS checks"), driven through the real service: each one answers
// a real AuthnRequest of a fresh sign-in (read from the URL the service returns), breaks one rule,
// and must send the browser back to redirect_to with ?error=invalid_saml_response and a reason,
// with no code and no user created. The attacker's email lies inside the provider's domain, so a
// response that got through would sign someone in and fail the test.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchangeCode, startSignIn } from '../helpers/oidc-idp.js';
import { postToAcs, readAuthnRequest, TestIdp, testKeys, type ResponseOptions, type SignMode } from '../helpers/saml-idp.js';
import { startTestService, type TestProject, type TestService } from '../helpers/service.js';
import { applyXsw, XSW_VARIANTS } from '../unit/saml/xsw.js';

const VICTIM = 'victim@corp.test';
const ATTACKER = 'mallory@corp.test';

describe('SAML ACS refuses', () => {
  let svc: TestService;
  let project: TestProject;
  let providerId: string;
  const app = 'http://app.test';
  const redirectTo = `${app}/auth/callback`;
  const idp = new TestIdp({ entityId: 'https://idp.corp.test/saml' });
  const logs: string[] = [];

  async function begin() {
    const started = await startSignIn(project, { domain: 'corp.test' }, redirectTo);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const request = readAuthnRequest(started.url!);
    const options = (o: Partial<ResponseOptions> = {}): ResponseOptions => ({
      sp: { entityId: request.issuer, acsUrl: request.acsUrl },
      requestId: request.id,
      nameId: VICTIM,
      attributes: { email: [VICTIM], givenName: ['Vic'] },
      ...o,
    });
    const post = (samlResponse: string, relayState = request.relayState!) => postToAcs(request.acsUrl, { SAMLResponse: samlResponse, RelayState: relayState });
    return { request, verifier: started.verifier, options, post };
  }

  /** A fresh sign-in answered with `xml`'s builder; returns the landing with its error. */
  async function attempt(build: (o: (x?: Partial<ResponseOptions>) => ResponseOptions) => string) {
    const flow = await begin();
    return flow.post(Buffer.from(build(flow.options)).toString('base64'));
  }

  function expectRefused(landed: URL, reason: RegExp) {
    expect(landed.origin + landed.pathname).toBe(redirectTo);
    expect(landed.searchParams.get('code')).toBeNull();
    expect(landed.searchParams.get('error')).toBe('invalid_saml_response');
    expect(landed.searchParams.get('error_description')).toMatch(reason);
  }

  beforeAll(async () => {
    // dozens of sign-ins from one address for one project; the limit itself: sso-rate-limit.test.ts
    svc = await startTestService({ env: { LOG_LEVEL: 'info', AUTH_RATE_LIMIT_SSO: 'off' } });
    // the service's log lines, kept for the logging test instead of going to the test output
    const stream = (svc.ctx.log as unknown as Record<symbol, { write(line: string): boolean }>)[pino.symbols.streamSym];
    stream.write = (line: string) => logs.push(line) > 0;
    project = await svc.project('enterprise', { siteUrl: app });
    const r = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
      kind: 'saml',
      name: 'Corp',
      domains: ['corp.test'],
      metadata_xml: idp.metadataXml(),
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    providerId = r.body.id;
  });
  afterAll(async () => {
    // nothing above may have created a user, least of all the attacker
    if (!svc) return;
    const users = await svc.ctx.db.query('select email from users where project_ref = $1', [project.ref]);
    expect(users.rows.map((u) => u.email)).not.toContain(ATTACKER);
    await svc?.stop();
  });

  it('nothing, when the response is good (the control for every case below)', async () => {
    const flow = await begin();
    const landed = await flow.post(idp.signedResponse(flow.options()));
    expect(landed.searchParams.get('error'), landed.searchParams.get('error_description') ?? '').toBeNull();
    const s = await exchangeCode(project, landed.searchParams.get('code')!, flow.verifier);
    expect(s.body.user.email).toBe(VICTIM);
  });

  describe('XML signature wrapping', () => {
    // XSW1-2 wrap a Response signature (the IdP signs both levels), XSW3-8 an Assertion signature.
    it.each(XSW_VARIANTS.map((v) => [v, (v === 'XSW1' || v === 'XSW2' ? 'both' : 'assertion') as SignMode] as const))('%s', async (variant, sign) => {
      const landed = await attempt((o) => applyXsw(variant, idp.responseXml(o({ sign })), ATTACKER));
      expectRefused(landed, /refused: /);
    });
  });

  describe('signatures', () => {
    it('an unsigned assertion', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ sign: 'none' }))), /not signed/);
    });

    it('a signature on the response only', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ sign: 'response' }))), /assertion is not signed/);
    });

    it('an attribute changed after signing', async () => {
      const landed = await attempt((o) => {
        const xml = idp.responseXml(o({ attributes: { email: [VICTIM], givenName: ['Vic'], role: ['user'] } }));
        expect(xml).toContain('>user<');
        return xml.replace('>user<', '>admin<');
      });
      expectRefused(landed, /digest mismatch/);
    });

    it('a certificate that is not in the metadata', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ signWith: testKeys.attacker }))), /not made by any signing certificate/);
    });
  });

  describe('binding to this SP and this request', () => {
    it('a wrong audience', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ audience: 'https://other-sp.test/metadata' }))), /Audience/);
    });

    it('a wrong recipient', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ recipient: 'https://other-sp.test/acs' }))), /Recipient/);
    });

    it('a wrong destination', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ destination: 'https://other-sp.test/acs' }))), /Destination/);
    });

    it('a wrong issuer', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ issuer: 'https://evil-idp.test/saml' }))), /Issuer/);
    });

    it('a wrong InResponseTo', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ responseInResponseTo: '_not_our_request', subjectInResponseTo: '_not_our_request' }))), /InResponseTo does not match/);
    });

    it('a missing InResponseTo (IdP-initiated)', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ responseInResponseTo: null, subjectInResponseTo: null }))), /no InResponseTo/);
    });

    it("a response to another sign-in's request, posted with this one's RelayState", async () => {
      const other = await begin();
      const mine = await begin();
      const landed = await mine.post(idp.signedResponse(other.options()));
      expectRefused(landed, /InResponseTo does not match/);
    });

    it("a good response posted to another provider's ACS", async () => {
      const other = await svc.api(project.ownerToken, 'POST', `/v1/projects/${project.ref}/auth/providers/sso`, {
        kind: 'saml',
        name: 'Other',
        domains: ['other.test'],
        metadata_xml: idp.metadataXml(),
      });
      expect(other.status, JSON.stringify(other.body)).toBe(201);
      const flow = await begin();
      const landed = await postToAcs(other.body.acs_url, { SAMLResponse: idp.signedResponse(flow.options()), RelayState: flow.request.relayState! });
      expectRefused(landed, /another provider/);
    });

    it('a good response after its sign-in attempt expired', async () => {
      const flow = await begin();
      await svc.ctx.db.query(`update sso_flows set expires_at = now() - interval '1 second' where saml_request_id = $1`, [flow.request.id]);
      expectRefused(await flow.post(idp.signedResponse(flow.options())), /expired; start again/);
    });

    it('an IdP-initiated post without a RelayState of ours, sent back to the site URL', async () => {
      const flow = await begin();
      const landed = await postToAcs(flow.request.acsUrl, { SAMLResponse: idp.signedResponse(flow.options()) });
      expect(landed.origin + landed.pathname).toBe(`${app}/`);
      expect(landed.searchParams.get('error')).toBe('invalid_saml_response');
    });
  });

  describe('time and content', () => {
    // 10 minutes is beyond the 5-minute validity plus the 2-minute default clock skew either way
    it('an expired assertion', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ timeShiftMs: -10 * 60_000 }))), /expired/);
    });

    it('an assertion that is not yet valid', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ timeShiftMs: 10 * 60_000 }))), /not yet valid/);
    });

    it('a non-email NameID', async () => {
      const landed = await attempt((o) => idp.responseXml(o({ nameId: 'AAdzZWNyZXQx', nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent' })));
      expectRefused(landed, /NameID format/);
    });

    it('an encrypted assertion, with a clear reason', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ encryptAssertion: true }))), /encrypted assertions are not supported/);
    });

    it('a failure status from the IdP', async () => {
      expectRefused(await attempt((o) => idp.responseXml(o({ statusCode: 'urn:oasis:names:tc:SAML:2.0:status:Requester' }))), /did not report success/);
    });

    it('a form that is not a SAML response', async () => {
      const flow = await begin();
      const landed = await postToAcs(flow.request.acsUrl, { SAMLResponse: 'not base64 !', RelayState: flow.request.relayState! });
      expectRefused(landed, /not base64/);
    });
  });

  it('logs the reason of a refusal with the request id, and never the response itself', async () => {
    const flow = await begin();
    const samlResponse = idp.signedResponse(flow.options({ audience: 'https://other-sp.test/metadata' }));
    const from = logs.length;
    await flow.post(samlResponse);
    const lines = logs.slice(from).map((l) => JSON.parse(l));
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'saml response refused', reqId: expect.any(String), reason: expect.stringMatching(/Audience/) }));
    const text = logs.slice(from).join('');
    expect(text).not.toContain(samlResponse.slice(0, 64));
    expect(text).not.toContain(flow.request.relayState!);
  });

  describe('replay', () => {
    it('a response posted a second time', async () => {
      const flow = await begin();
      const samlResponse = idp.signedResponse(flow.options());
      expect((await flow.post(samlResponse)).searchParams.get('code')).toBeTruthy();
      const again = await flow.post(samlResponse);
      expect(again.searchParams.get('error')).toBe('invalid_saml_response');
      expect(again.searchParams.get('error_description')).toMatch(/already used/);
    });

    it('a response whose flow is somehow usable again: the replay records refuse it on their own', async () => {
      const flow = await begin();
      const samlResponse = idp.signedResponse(flow.options());
      expect((await flow.post(samlResponse)).searchParams.get('code')).toBeTruthy();
      // undo the flow's single use, leaving only saml_replay between the response and a second sign-in
      const reopened = await svc.ctx.db.query('update sso_flows set consumed_at = null where saml_request_id = $1', [flow.request.id]);
      expect(reopened.rowCount).toBe(1);
      expectRefused(await flow.post(samlResponse), /already used \(replay\)/);
      const records = await svc.ctx.db.query('select count(*)::int as n from saml_replay where provider_id = $1 and expires_at > now()', [providerId]);
      expect(records.rows[0].n).toBeGreaterThanOrEqual(2);
    });
  });
});
