import { describe, expect, it } from 'vitest';
import { parseIdpMetadata } from '../../../src/sso/saml/core/metadata.js';
import { TestIdp, testKeys } from '../../helpers/saml-idp.js';

const failsWith = (xml: string, code: string, reason: RegExp) =>
  expect(() => parseIdpMetadata(xml)).toThrow(expect.objectContaining({ name: 'SamlError', code, message: expect.stringMatching(reason) }));

describe('parseIdpMetadata', () => {
  it('reads entity ID, HTTP-Redirect SSO URL and the signing certificate', () => {
    const idp = new TestIdp({ ssoRedirectUrl: 'https://idp.example/sso?tenant=a&x=1' });
    expect(parseIdpMetadata(idp.metadataXml())).toEqual({
      entityId: idp.entityId,
      ssoRedirectUrl: 'https://idp.example/sso?tenant=a&x=1',
      signingCerts: [testKeys.primary.certB64],
    });
  });

  it('returns every signing certificate while the IdP rotates keys', () => {
    const idp = new TestIdp({ publishedKeys: [testKeys.primary, testKeys.secondary] });
    expect(parseIdpMetadata(idp.metadataXml()).signingCerts).toEqual([testKeys.primary.certB64, testKeys.secondary.certB64]);
  });

  it('treats a KeyDescriptor without use as a signing key, and ignores encryption-only keys', () => {
    const xml = new TestIdp({ publishedKeys: [testKeys.primary, testKeys.secondary] })
      .metadataXml()
      .replace('<md:KeyDescriptor use="signing">', '<md:KeyDescriptor>')
      .replace('<md:KeyDescriptor use="signing">', '<md:KeyDescriptor use="encryption">');
    expect(parseIdpMetadata(xml).signingCerts).toEqual([testKeys.primary.certB64]);
  });

  it('accepts certificates wrapped over several lines', () => {
    const xml = new TestIdp().metadataXml().replace(testKeys.primary.certB64, `\n  ${testKeys.primary.certB64.replace(/.{64}/g, '$&\n  ')}\n`);
    expect(parseIdpMetadata(xml).signingCerts).toEqual([testKeys.primary.certB64]);
  });

  it('accepts an EntitiesDescriptor holding exactly one IdP', () => {
    const inner = new TestIdp().metadataXml().replace(/^<\?xml[^>]*\?>/, '');
    const wrap = (...entities: string[]) => `<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata">${entities.join('')}</md:EntitiesDescriptor>`;
    expect(parseIdpMetadata(wrap(inner)).entityId).toBe(new TestIdp().entityId);
    failsWith(wrap(inner, inner.replace('https://idp.test.example/metadata', 'https://other.example')), 'saml_metadata_invalid', /exactly one identity provider/);
  });

  it('refuses metadata without a signing certificate', () => {
    failsWith(new TestIdp().metadataXml({ withSigningKeys: false }), 'saml_metadata_no_signing_cert', /no signing certificate/);
    failsWith(new TestIdp({ publishedKeys: [] }).metadataXml(), 'saml_metadata_no_signing_cert', /no signing certificate/);
  });

  it('refuses metadata without an HTTP-Redirect SingleSignOnService', () => {
    const xml = new TestIdp().metadataXml().replace(/<md:SingleSignOnService Binding="[^"]*HTTP-Redirect"[^>]*\/>/, '');
    failsWith(xml, 'saml_metadata_invalid', /HTTP-Redirect/);
  });

  it('refuses an SSO location the browser must not be sent to', () => {
    failsWith(new TestIdp({ ssoRedirectUrl: 'javascript:alert(1)' }).metadataXml(), 'saml_metadata_invalid', /http\(s\)/);
    failsWith(new TestIdp({ ssoRedirectUrl: '/relative' }).metadataXml(), 'saml_metadata_invalid', /absolute URL/);
  });

  it('refuses a certificate that is not X.509', () => {
    failsWith(new TestIdp().metadataXml().replace(testKeys.primary.certB64, 'bm90IGEgY2VydA=='), 'saml_metadata_invalid', /X\.509/);
  });

  it('refuses SP metadata, non-metadata XML, DTDs and broken XML', () => {
    const spLike = new TestIdp().metadataXml().replaceAll('IDPSSODescriptor', 'SPSSODescriptor');
    failsWith(spLike, 'saml_metadata_invalid', /IDPSSODescriptor/);
    failsWith('<html><body>login</body></html>', 'saml_metadata_invalid', /not a SAML metadata/);
    failsWith(`<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${new TestIdp().metadataXml().replace(/^<\?xml[^>]*\?>/, '')}`, 'saml_metadata_invalid', /DOCTYPE/);
    failsWith('<md:EntityDescriptor', 'saml_metadata_invalid', /well-formed/);
    failsWith(new TestIdp().metadataXml().replace(/entityID="[^"]*"/, ''), 'saml_metadata_invalid', /entityID/);
  });
});
