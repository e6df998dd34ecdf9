import { describe, expect, it } from 'vitest';
import { toClaims } from '../../../src/sso/saml/acs.js';
import type { VerifiedAssertion } from '../../../src/sso/saml/core/index.js';

const assertion = (attributes: Record<string, string[]>, nameId = 'Alice@Corp.Example'): VerifiedAssertion => ({
  responseId: '_r',
  assertionId: '_a',
  nameId,
  nameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  issuer: 'https://idp.example',
  attributes,
  notOnOrAfter: new Date(),
});

describe('SAML assertion → sign-in claims', () => {
  it('keys the identity on the NameID and lower-cases emails', () => {
    const c = toClaims(assertion({ email: ['ALICE@corp.example'] }), {});
    expect(c).toMatchObject({ subject: 'alice@corp.example', email: 'alice@corp.example', email_verified: false, image: null });
    expect(c.raw).toMatchObject({ email: ['ALICE@corp.example'], name_id: 'Alice@Corp.Example', issuer: 'https://idp.example' });
  });

  it('counts the email as verified only through a mapped attribute saying so', () => {
    const attrs = { verified: ['TRUE'], photo: ['https://img.example/a.png'] };
    expect(toClaims(assertion(attrs), { email_verified: 'verified', image: 'photo' })).toMatchObject({ email_verified: true, image: 'https://img.example/a.png' });
    expect(toClaims(assertion({ verified: ['no'] }), { email_verified: 'verified' }).email_verified).toBe(false);
    expect(toClaims(assertion(attrs), { email_verified: 'constructor', image: 'toString' })).toMatchObject({ email_verified: false, image: null });
  });

  it('uses the SAML defaults for names and copies extra', () => {
    const c = toClaims(assertion({ givenName: ['Alice'], surname: ['Liddell'], groups: ['a', 'b'] }), { extra: { groups: 'groups' } });
    expect(c).toMatchObject({ name: 'Alice Liddell', first_name: 'Alice', last_name: 'Liddell', extra: { groups: ['a', 'b'] } });
  });
});
