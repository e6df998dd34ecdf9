import { describe, expect, it } from 'vitest';
import { DOMParser } from '@xmldom/xmldom';
import { buildAuthnRequestRedirect, spMetadataXml } from '../../../src/sso/saml/core/sp.js';
import { readAuthnRequest } from '../../helpers/saml-idp.js';
import { idpMetadata, sp } from './context.js';

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';

describe('spMetadataXml', () => {
  it('describes one HTTP-POST ACS, the email NameID format and signed assertions', () => {
    const root = new DOMParser().parseFromString(spMetadataXml(sp), 'text/xml').documentElement!;
    expect(root.localName).toBe('EntityDescriptor');
    expect(root.getAttribute('entityID')).toBe(sp.entityId);
    const descriptor = root.getElementsByTagNameNS(MD, 'SPSSODescriptor')[0];
    expect(descriptor.getAttribute('WantAssertionsSigned')).toBe('true');
    expect(descriptor.getAttribute('AuthnRequestsSigned')).toBe('false');
    expect(descriptor.getAttribute('protocolSupportEnumeration')).toBe('urn:oasis:names:tc:SAML:2.0:protocol');
    expect(descriptor.getElementsByTagNameNS(MD, 'NameIDFormat')[0].textContent).toBe('urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress');
    const acs = Array.from(descriptor.getElementsByTagNameNS(MD, 'AssertionConsumerService'));
    expect(acs.map((a) => [a.getAttribute('Binding'), a.getAttribute('Location')])).toEqual([['urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST', sp.acsUrl]]);
    expect(descriptor.getElementsByTagNameNS(MD, 'KeyDescriptor')).toHaveLength(0);
  });

  it('escapes values it embeds', () => {
    const xml = spMetadataXml({ entityId: 'https://sp.example/?a=1&b="2"', acsUrl: sp.acsUrl });
    const root = new DOMParser().parseFromString(xml, 'text/xml').documentElement!;
    expect(root.getAttribute('entityID')).toBe('https://sp.example/?a=1&b="2"');
  });
});

describe('buildAuthnRequestRedirect', () => {
  it('sends an unsigned AuthnRequest for this SP to the IdP over HTTP-Redirect', () => {
    const { url, requestId } = buildAuthnRequestRedirect(sp, idpMetadata, 'state-123');
    expect(url.startsWith(`${idpMetadata.ssoRedirectUrl}?SAMLRequest=`)).toBe(true);
    const params = new URL(url).searchParams;
    expect(params.get('RelayState')).toBe('state-123');
    expect(params.has('Signature')).toBe(false);
    expect(params.has('SigAlg')).toBe(false);

    const req = readAuthnRequest(url);
    expect(req).toMatchObject({ id: requestId, issuer: sp.entityId, acsUrl: sp.acsUrl, destination: idpMetadata.ssoRedirectUrl });
    expect(req.xml).toContain('ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"');
    expect(req.xml).toContain('Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"');
    expect(req.xml).not.toContain('Signature');
  });

  it('uses a fresh, XML-ID-safe request ID every time', () => {
    const ids = new Set(Array.from({ length: 20 }, () => buildAuthnRequestRedirect(sp, idpMetadata, 's').requestId));
    expect(ids.size).toBe(20);
    for (const id of ids) expect(id).toMatch(/^[_A-Za-z][\w.-]*$/);
  });

  it('appends to an SSO URL that already has a query string', () => {
    const idp = { ...idpMetadata, ssoRedirectUrl: 'https://accounts.example/o/saml2/idp?idpid=C0abc' };
    const { url } = buildAuthnRequestRedirect(sp, idp, 'state with spaces & symbols');
    const parsed = new URL(url);
    expect(parsed.searchParams.get('idpid')).toBe('C0abc');
    expect(parsed.searchParams.get('RelayState')).toBe('state with spaces & symbols');
    expect(readAuthnRequest(url).destination).toBe(idp.ssoRedirectUrl);
  });

  it('refuses a RelayState over the 80 bytes the binding allows', () => {
    expect(() => buildAuthnRequestRedirect(sp, idpMetadata, 'x'.repeat(81))).toThrow(RangeError);
    expect(() => buildAuthnRequestRedirect(sp, idpMetadata, 'x'.repeat(80))).not.toThrow();
  });
});
