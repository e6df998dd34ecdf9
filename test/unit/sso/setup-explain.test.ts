// The plain-words explanations of failed test sign-ins (src/sso/setup/explain.ts), against the SAML
// core's own refusal texts: each is matched to the check it names, and the fix quotes our values.
import { describe, expect, it } from 'vitest';
import { explainClaims, explainIdpRequest, explainOidc, explainSaml, IDP_REQUEST_FAILED, withoutNetworkDetailIn } from '../../../src/sso/setup/explain.js';

const v = { acsUrl: 'https://sp.test/acs/1', spEntityId: 'https://sp.test/md/1', redirectUri: 'https://sp.test/cb', domains: ['acme.test'] };

describe('explainSaml', () => {
  it.each([
    ['the assertion Audience is not our SP entity ID', 'audience', v.spEntityId],
    ['the assertion has no AudienceRestriction', 'audience', v.spEntityId],
    ['the SubjectConfirmationData Recipient is not our ACS URL', 'recipient', v.acsUrl],
    ['the Response Destination is not our ACS URL', 'destination', v.acsUrl],
    ['assertion signature: not made by any signing certificate in the IdP metadata', 'signature', 'metadata'],
    ['the assertion is not signed (a signature on the Response only is not accepted)', 'signature', 'Sign assertion'],
    ['Conditions is not yet valid (NotBefore 2030-01-01T00:00:00.000Z)', 'clock', 'NTP'],
    ['SubjectConfirmationData has expired (NotOnOrAfter 2020-01-01T00:00:00.000Z)', 'clock', 'NTP'],
    ['encrypted assertions are not supported', 'encryption', 'encryption off'],
    ['the NameID format must be urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', 'nameid', 'emailAddress'],
    ['the Response Issuer is not the IdP entity ID from the metadata', 'issuer', 'metadata'],
    ['the IdP did not report success (status urn:oasis:names:tc:SAML:2.0:status:Responder, none)', 'status', 'assigned'],
  ])('%s → %s', (reason, check, inFix) => {
    const e = explainSaml(reason, v);
    expect(e.check).toBe(check);
    expect(e.fix).toContain(inFix);
    expect(e.detail).toBe(reason);
  });

  it('keeps an unknown reason as the detail of a generic explanation', () => {
    expect(explainSaml('something new', v)).toMatchObject({ check: 'other', detail: 'something new' });
  });
});

describe('explainOidc', () => {
  it('uses the IdP error code first, then the validation reason', () => {
    expect(explainOidc('x', 'access_denied', v).check).toBe('idp_refused');
    expect(explainOidc('x', 'invalid_client', v).check).toBe('client');
    expect(explainOidc('The identity provider refused the code exchange: invalid_grant (redirect_uri mismatch).', 'invalid_grant', v).fix).toContain(v.redirectUri);
    expect(explainOidc('unexpected JWT "aud" (audience) claim value', undefined, v).check).toBe('audience');
    expect(explainOidc('unexpected JWT "exp" claim value, expired', undefined, v).check).toBe('clock');
    expect(explainOidc('weird', undefined, v)).toMatchObject({ check: 'token', detail: 'weird' });
  });
});

describe('the rule of the most specific domain, in plain words', () => {
  it('names the domain and what to test with instead', () => {
    const e = explainClaims('domain_other_provider', { ...v, domain: 'eu.acme.test', otherProviderDomain: 'eu.acme.test' });
    expect(e.check).toBe('domain_other_provider');
    expect(e.title).toContain('eu.acme.test');
    expect(e.title).toMatch(/another SSO provider/);
    expect(e.fix).toContain('acme.test');
  });
});

describe('no network detail for the link holder', () => {
  it.each([
    'The identity provider\'s answer did not validate: fetch failed.',
    'connect ECONNREFUSED 127.0.0.1:9',
    'getaddrinfo ENOTFOUND idp.internal',
    'refused: 10.0.0.1 is a private address',
    'intranet.test resolves to a private address, which the service may not connect to (OUTBOUND_ALLOW_CIDRS)',
    'socket hang up at [::1]:8080',
    'UND_ERR_CONNECT_TIMEOUT',
  ])('%s → the generic explanation', (detail) => {
    const e = withoutNetworkDetailIn({ check: 'token', title: 't', fix: 'f', detail });
    expect(e).toEqual(explainIdpRequest());
    expect(e.detail).toBe(IDP_REQUEST_FAILED);
  });

  it('keeps explanations without network detail, URLs of an IdP error description included', () => {
    const kept = [
      explainSaml('the assertion Audience is not our SP entity ID', v),
      explainSaml('Conditions is not yet valid (NotBefore 2030-01-01T00:00:00.000Z)', v),
      explainOidc('The identity provider refused the sign-in: invalid_request (redirect_uri must be https://app.test/cb).', undefined, v),
    ];
    for (const e of kept) expect(withoutNetworkDetailIn(e)).toBe(e);
  });
});
