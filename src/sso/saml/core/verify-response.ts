// Assertion Consumer Service logic: turns the SAMLResponse form field an IdP POSTed to our ACS
// into a verified assertion, or refuses it with SamlError('invalid_saml_response', reason).
// Pure: no I/O. Replay protection is the caller's: it must record responseId and assertionId
// until notOnOrAfter + clockSkewMs and refuse any it has seen.
import { readSignedAssertion, type AssertionValues } from './assertion.js';
import { SamlError } from './errors.js';
import type { IdpMetadata } from './metadata.js';
import { assertResponseRoot, assertSuccessStatus, checkResponseEnvelope } from './response.js';
import { assertSchemaValid } from './schema.js';
import { verifyEnvelopedSignature } from './signature.js';
import type { SpConfig } from './sp.js';
import { locateResponseParts } from './structure.js';
import { assertNoDoctype, parseStrictXml } from './xml.js';

export interface AcsExpectations {
  sp: SpConfig;
  idp: IdpMetadata;
  /** ID of the AuthnRequest this browser was sent with (from buildAuthnRequestRedirect). */
  requestId: string;
  /** Defaults to the current time; injectable so tests control the clock. */
  now?: Date;
  /** Allowed clock difference with the IdP, applied to every NotBefore/NotOnOrAfter. */
  clockSkewMs: number;
}

/** The signed assertion's values, and the ID of the Response that carried it. */
export interface VerifiedAssertion extends AssertionValues {
  responseId: string;
}

// Far above any real response (large group lists stay well under 100 KiB) but bounded, so that a
// hostile POST cannot make us parse and canonicalise megabytes.
const MAX_RESPONSE_BYTES = 512 * 1024;

const invalid = (reason: string) => new SamlError('invalid_saml_response', reason);

/**
 * Verifies a SAMLResponse (the base64 form field of the HTTP-POST binding) against the pending
 * request, the SP and the IdP metadata. Resolves to values read only from the signed assertion;
 * rejects with SamlError('invalid_saml_response', reason) on any failure.
 */
export async function verifySamlResponse(samlResponseB64: string, exp: AcsExpectations): Promise<VerifiedAssertion> {
  checkExpectations(exp);
  const xml = decodeSamlResponse(samlResponseB64);
  assertNoDoctype(xml, invalid);
  await assertSchemaValid(xml);
  return verifyResponseXml(xml, exp);
}

/**
 * Everything after decoding and schema validation. Exported so tests can show these checks refuse
 * wrapped and forged documents on their own, without the schema validator as a safety net.
 */
export function verifyResponseXml(xml: string, exp: AcsExpectations): VerifiedAssertion {
  const response = assertResponseRoot(parseStrictXml(xml, invalid));
  assertSuccessStatus(response);
  const parts = locateResponseParts(response);
  const certs = exp.idp.signingCerts;

  const signedAssertionXml = verifyEnvelopedSignature(xml, parts.assertion, parts.assertionSignature, certs, 'assertion');
  if (parts.responseSignature) verifyEnvelopedSignature(xml, response, parts.responseSignature, certs, 'response');

  checkResponseEnvelope(response, { idpEntityId: exp.idp.entityId, acsUrl: exp.sp.acsUrl, requestId: exp.requestId });
  const values = readSignedAssertion(signedAssertionXml, parts.assertion.getAttribute('ID')!, {
    idpEntityId: exp.idp.entityId,
    sp: exp.sp,
    requestId: exp.requestId,
    now: exp.now ?? new Date(),
    clockSkewMs: exp.clockSkewMs,
  });
  return { responseId: response.getAttribute('ID')!, ...values };
}

/** Misuse by the caller is a bug, not a bad response, so it is not reported as one. */
function checkExpectations(exp: AcsExpectations): void {
  if (!exp.requestId) throw new TypeError('requestId is required: only SP-initiated sign-in is supported');
  if (!Number.isFinite(exp.clockSkewMs) || exp.clockSkewMs < 0) throw new TypeError('clockSkewMs must be a non-negative number');
  if (exp.idp.signingCerts.length === 0) throw new TypeError('the IdP metadata has no signing certificate');
}

function decodeSamlResponse(b64: string): string {
  // Some IdPs wrap base64 at 76 columns; the line breaks survive form encoding.
  const compact = b64.replace(/\s+/g, '');
  if (compact.length > Math.ceil(MAX_RESPONSE_BYTES / 3) * 4) throw invalid('the SAMLResponse is too large');
  if (!compact || compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) throw invalid('the SAMLResponse is not base64');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(compact, 'base64'));
  } catch {
    throw invalid('the SAMLResponse is not UTF-8 text');
  }
}
