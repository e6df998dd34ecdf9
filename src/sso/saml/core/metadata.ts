// Reads the three things the SP needs from an IdP's SAML metadata: its entity ID, where to send the
// browser (HTTP-Redirect SingleSignOnService) and the certificates its assertions must be signed
// with. The result is plain data so it can be stored with the provider and re-read on rotation
// (PATCH refresh_metadata) without keeping the XML around.
import { X509Certificate } from 'node:crypto';
import { SamlError } from './errors.js';
import { NS, attr, children, descendants, is, parseStrictXml, textOnly } from './xml.js';

export interface IdpMetadata {
  /** The IdP's entityID; assertions and responses must carry it as their Issuer. */
  entityId: string;
  /** SingleSignOnService location for the HTTP-Redirect binding (may already carry a query string). */
  ssoRedirectUrl: string;
  /**
   * Signing certificates as base64 DER without PEM armour. Several are normal during a rotation:
   * a response verifies when any one of them signed it.
   */
  signingCerts: string[];
}

export const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const SAML2_PROTOCOL = 'urn:oasis:names:tc:SAML:2.0:protocol';

/**
 * Parses IdP metadata (an EntityDescriptor, or an EntitiesDescriptor holding exactly one IdP).
 * Throws SamlError 'saml_metadata_invalid' when it cannot be used, and
 * 'saml_metadata_no_signing_cert' when it has no signing certificate: signed assertions are
 * mandatory (docs/sso-saml.md), so such an IdP could never sign anyone in.
 */
export function parseIdpMetadata(xml: string): IdpMetadata {
  const doc = parseStrictXml(xml, invalid);
  const entity = selectIdpEntity(doc.documentElement);

  const entityId = attr(entity, 'entityID')?.trim();
  if (!entityId) throw invalid('the EntityDescriptor has no entityID');

  const roles = children(entity, NS.metadata, 'IDPSSODescriptor').filter(supportsSaml2);
  if (roles.length !== 1) throw invalid(`expected one SAML 2.0 IDPSSODescriptor, found ${roles.length}`);
  const role = roles[0];

  return { entityId, ssoRedirectUrl: redirectSsoUrl(role), signingCerts: signingCerts(role) };
}

function invalid(reason: string): SamlError {
  return new SamlError('saml_metadata_invalid', `IdP metadata: ${reason}`);
}

function selectIdpEntity(root: Element): Element {
  if (is(root, NS.metadata, 'EntityDescriptor')) return root;
  if (!is(root, NS.metadata, 'EntitiesDescriptor')) throw invalid('the root element is not a SAML metadata EntityDescriptor');
  // Aggregates (federation feeds) are accepted only when unambiguous: picking "the first IdP" of
  // many would silently trust whichever entity happens to be listed first.
  const idps = descendants(root).filter(
    (el) => is(el, NS.metadata, 'EntityDescriptor') && children(el, NS.metadata, 'IDPSSODescriptor').length > 0,
  );
  if (idps.length !== 1) throw invalid(`the EntitiesDescriptor must contain exactly one identity provider, found ${idps.length}`);
  return idps[0];
}

function supportsSaml2(role: Element): boolean {
  return (attr(role, 'protocolSupportEnumeration') ?? '').split(/\s+/).includes(SAML2_PROTOCOL);
}

function redirectSsoUrl(role: Element): string {
  const service = children(role, NS.metadata, 'SingleSignOnService').find((s) => attr(s, 'Binding') === REDIRECT_BINDING);
  const location = service && attr(service, 'Location')?.trim();
  if (!location) throw invalid('no SingleSignOnService with the HTTP-Redirect binding (only SP-initiated redirect sign-in is supported)');
  let url: URL;
  try {
    url = new URL(location);
  } catch {
    throw invalid('the HTTP-Redirect SingleSignOnService Location is not an absolute URL');
  }
  // The browser is sent there, so anything but http(s) (javascript:, data:) would be an injection.
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid('the SingleSignOnService Location must be an http(s) URL');
  return location;
}

function signingCerts(role: Element): string[] {
  const certs = new Set<string>();
  for (const kd of children(role, NS.metadata, 'KeyDescriptor')) {
    // A KeyDescriptor without `use` covers both signing and encryption (saml-metadata 2.4.1.1).
    const use = attr(kd, 'use');
    if (use !== undefined && use !== 'signing') continue;
    for (const keyInfo of children(kd, NS.dsig, 'KeyInfo')) {
      for (const data of children(keyInfo, NS.dsig, 'X509Data')) {
        for (const certEl of children(data, NS.dsig, 'X509Certificate')) certs.add(normaliseCert(textOnly(certEl)));
      }
    }
  }
  if (certs.size === 0) {
    throw new SamlError('saml_metadata_no_signing_cert', 'IdP metadata: no signing certificate (KeyDescriptor use="signing" with an X509Certificate)');
  }
  return [...certs];
}

function normaliseCert(text: string | null): string {
  const b64 = (text ?? '').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) throw invalid('a signing certificate is not base64');
  try {
    // Parsing now turns a pasted-wrong certificate into an error at save time instead of a
    // "signature does not verify" at every sign-in.
    new X509Certificate(Buffer.from(b64, 'base64'));
  } catch {
    throw invalid('a signing certificate is not a readable X.509 certificate');
  }
  return b64;
}
