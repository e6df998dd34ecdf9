// Checks on the samlp:Response envelope. Unless the IdP also signed the Response these values are
// not covered by any signature, so they only add assurance; the binding to our request and our ACS
// that an attacker cannot forge is re-checked inside the signed assertion (SubjectConfirmationData).
import { SamlError } from './errors.js';
import { NS, attr, children, is, textOnly } from './xml.js';

const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';

const invalid = (reason: string) => new SamlError('invalid_saml_response', reason);

export function assertResponseRoot(doc: Document): Element {
  const root = doc.documentElement;
  if (!is(root, NS.protocol, 'Response')) throw invalid('the root element is not a samlp:Response');
  if (attr(root, 'Version') !== '2.0') throw invalid('the Response is not SAML version 2.0');
  if (!attr(root, 'ID')) throw invalid('the Response has no ID');
  return root;
}

/** Checked before looking for an assertion: an IdP reporting failure normally sends none. */
export function assertSuccessStatus(response: Element): void {
  const status = children(response, NS.protocol, 'Status')[0];
  const top = status && children(status, NS.protocol, 'StatusCode')[0];
  const code = top && attr(top, 'Value');
  if (code === SUCCESS) return;
  const second = top && children(top, NS.protocol, 'StatusCode')[0];
  // The codes are URIs chosen by the IdP; keep only URI characters so they are safe to log.
  const safe = (s: string | undefined) => (s ?? 'none').replace(/[^\w:./#-]/g, '').slice(0, 120);
  throw invalid(`the IdP did not report success (status ${safe(code)}, ${safe(second ? attr(second, 'Value') : undefined)})`);
}

export function checkResponseEnvelope(response: Element, exp: { idpEntityId: string; acsUrl: string; requestId: string }): void {
  const issuers = children(response, NS.assertion, 'Issuer');
  if (issuers.length !== 1 || textOnly(issuers[0])?.trim() !== exp.idpEntityId) {
    throw invalid('the Response Issuer is not the IdP entity ID from the metadata');
  }
  // A response without Destination could be replayed against any SP that trusts the same IdP.
  if (attr(response, 'Destination') !== exp.acsUrl) throw invalid('the Response Destination is not our ACS URL');
  const inResponseTo = attr(response, 'InResponseTo');
  if (inResponseTo === undefined) throw invalid('the Response has no InResponseTo (IdP-initiated sign-in is not supported)');
  if (inResponseTo !== exp.requestId) throw invalid('the Response InResponseTo does not match the pending AuthnRequest');
}
