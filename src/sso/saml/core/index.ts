// Public surface of the SAML service-provider core. It is protocol logic only (no HTTP, no DB):
// the routes parse form fields and load providers, then call these functions.
export { SamlError, isSamlError, type SamlErrorCode } from './errors.js';
export { parseIdpMetadata, type IdpMetadata } from './metadata.js';
export { spMetadataXml, buildAuthnRequestRedirect, EMAIL_NAMEID_FORMAT, type SpConfig } from './sp.js';
export { verifySamlResponse, type AcsExpectations, type VerifiedAssertion } from './verify-response.js';
export { mapSamlAttributes, type SamlAttributeMapping, type MappedSamlUser } from './attributes.js';
