// The service-provider side of SP-initiated sign-in: our metadata for the IdP admin and the
// HTTP-Redirect AuthnRequest that starts a sign-in. Both are produced by samlify, which already
// renders schema-valid, escaped XML for them; we only pin the options this service fixes (unsigned
// requests, signed assertions, email NameID, responses to one HTTP-POST ACS).
import samlify from 'samlify';
import { REDIRECT_BINDING, type IdpMetadata } from './metadata.js';
import { escapeXmlAttr } from './xml.js';

export interface SpConfig {
  /** Our entity ID for this provider; IdPs must put it in the assertion's Audience. */
  entityId: string;
  /** Our Assertion Consumer Service URL; responses must name it as Destination and Recipient. */
  acsUrl: string;
}

const POST_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';
export const EMAIL_NAMEID_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';

// saml-bindings 3.4.3: "RelayState data MUST NOT exceed 80 bytes"; IdPs may truncate or refuse more.
const MAX_RELAY_STATE_BYTES = 80;

function samlifySp(sp: SpConfig) {
  return samlify.ServiceProvider({
    entityID: sp.entityId,
    assertionConsumerService: [{ Binding: POST_BINDING, Location: sp.acsUrl }],
    nameIDFormat: [EMAIL_NAMEID_FORMAT],
    wantAssertionsSigned: true,
    authnRequestsSigned: false,
    // Lets the IdP create the user's identifier for our SP on first sign-in (needed for JIT users).
    allowCreate: true,
  });
}

/**
 * SP metadata XML: one HTTP-POST AssertionConsumerService, NameIDFormat emailAddress,
 * WantAssertionsSigned="true", AuthnRequestsSigned="false", no keys (we neither sign requests nor
 * accept encrypted assertions).
 */
export function spMetadataXml(sp: SpConfig): string {
  return samlifySp(sp).getMetadata();
}

/**
 * Builds an unsigned AuthnRequest for the HTTP-Redirect binding. The caller must keep `requestId`
 * (bound to the browser via `relayState` or a cookie) and pass it to verifySamlResponse: a response
 * is accepted only when it answers that exact request, which is what makes the flow SP-initiated.
 * `relayState` must be at most 80 bytes; an opaque random handle is the intended use.
 */
export function buildAuthnRequestRedirect(sp: SpConfig, idp: IdpMetadata, relayState: string): { url: string; requestId: string } {
  if (Buffer.byteLength(relayState) > MAX_RELAY_STATE_BYTES) {
    throw new RangeError(`relayState must be at most ${MAX_RELAY_STATE_BYTES} bytes`);
  }
  // samlify builds an IdP entity only from metadata; a minimal document keeps the options-object
  // path (which logs a warning for every IdP without a logout endpoint) out of the sign-in path.
  const idpEntity = samlify.IdentityProvider({
    metadata:
      `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${escapeXmlAttr(idp.entityId)}">` +
      `<IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" WantAuthnRequestsSigned="false">` +
      `<SingleSignOnService Binding="${REDIRECT_BINDING}" Location="${escapeXmlAttr(idp.ssoRedirectUrl)}"/>` +
      `</IDPSSODescriptor></EntityDescriptor>`,
  });
  const { id, context } = samlifySp(sp).createLoginRequest(idpEntity, 'redirect', { relayState });
  return { url: context, requestId: id };
}
