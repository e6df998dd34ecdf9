import { describe, expect, it } from 'vitest';
import type { VerifiedAssertion } from '../../../src/sso/saml/core/verify-response.js';
import { mapSamlAttributes } from '../../../src/sso/saml/core/attributes.js';

const assertion = (attributes: Record<string, string[]>, nameId = 'alice@corp.example'): VerifiedAssertion => ({
  responseId: '_r',
  assertionId: '_a',
  nameId,
  nameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  issuer: 'https://idp.example',
  attributes,
  notOnOrAfter: new Date(),
});

describe('mapSamlAttributes (SAML defaults)', () => {
  it('takes email from the email attribute and composes name from givenName and surname', () => {
    const a = assertion({ email: [' Alice.L@Corp.example '], givenName: ['Alice'], surname: ['Liddell'], displayName: ['Ali'] });
    expect(mapSamlAttributes(a)).toEqual({ email: 'Alice.L@Corp.example', name: 'Alice Liddell', first_name: 'Alice', last_name: 'Liddell', extra: {} });
  });

  it('falls back to the NameID for email and to displayName for name', () => {
    expect(mapSamlAttributes(assertion({ displayName: ['Ali L.'] }))).toEqual({ email: 'alice@corp.example', name: 'Ali L.', first_name: null, last_name: null, extra: {} });
  });

  it('uses whichever of givenName and surname is present', () => {
    expect(mapSamlAttributes(assertion({ surname: ['Liddell'], displayName: ['Ali'] })).name).toBe('Liddell');
  });

  it('has no name when nothing provides one, and ignores blank values', () => {
    expect(mapSamlAttributes(assertion({ email: ['  '], givenName: [''] }))).toMatchObject({ email: 'alice@corp.example', name: null, first_name: null });
  });

  it('follows a custom mapping, falling back to the defaults that still apply', () => {
    const a = assertion({
      'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress': ['a@corp.example'],
      'urn:oid:2.5.4.42': ['Alice'],
      'urn:oid:2.5.4.4': ['Liddell'],
      'urn:oid:2.16.840.1.113730.3.1.241': ['Dr. Alice Liddell'],
    });
    const mapping = {
      email: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
      first_name: 'urn:oid:2.5.4.42',
      last_name: 'urn:oid:2.5.4.4',
    };
    expect(mapSamlAttributes(a, mapping)).toMatchObject({ email: 'a@corp.example', name: 'Alice Liddell', first_name: 'Alice', last_name: 'Liddell' });
    expect(mapSamlAttributes(a, { ...mapping, name: 'urn:oid:2.16.840.1.113730.3.1.241' }).name).toBe('Dr. Alice Liddell');
    expect(mapSamlAttributes(a, { ...mapping, name: 'missing' }).name).toBe('Alice Liddell');
  });

  it('copies extra attributes: one value as a string, several as an array, absent ones not at all', () => {
    const a = assertion({ department: ['R&D'], groups: ['eng', 'admins'] });
    expect(mapSamlAttributes(a, { extra: { dept: 'department', groups: 'groups', cost_center: 'costCenter' } }).extra).toEqual({ dept: 'R&D', groups: ['eng', 'admins'] });
  });

  it('cannot be steered into Object.prototype by attribute or key names', () => {
    const a = assertion(Object.fromEntries([['__proto__', ['polluted']]]));
    const extra = Object.fromEntries([['__proto__', '__proto__'], ['valueOf', 'valueOf']]);
    const mapped = mapSamlAttributes(a, { email: 'constructor', name: 'toString', extra });
    expect(mapped.email).toBe('alice@corp.example');
    expect(mapped.name).toBeNull();
    expect(Object.getPrototypeOf(mapped.extra)).toBe(Object.prototype);
    expect(Object.keys(mapped.extra)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
