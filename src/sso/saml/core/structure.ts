// Structural checks on the whole Response document before any signature is verified. They make
// the document so regular that there is only one place an assertion or a signature can be: all
// eight classic signature-wrapping layouts (XSW1..8) need a second Assertion, a relocated or extra
// Signature, or a duplicated ID somewhere, and each of those is refused here on its own.
import { SamlError } from './errors.js';
import { NS, descendants, hasNodeOfType, is } from './xml.js';

export interface ResponseParts {
  response: Element;
  assertion: Element;
  assertionSignature: Element;
  /** Present when the IdP also signed the Response; optional, but verified when present. */
  responseSignature?: Element;
}

const PROCESSING_INSTRUCTION_NODE = 7;
const COMMENT_NODE = 8;
// Attribute names xml-crypto (and other XML-DSig stacks) treat as IDs when resolving "#id" URIs.
const ID_ATTRIBUTE_NAMES = new Set(['ID', 'Id', 'id', 'AssertionID']);

const invalid = (reason: string) => new SamlError('invalid_saml_response', reason);

export function locateResponseParts(response: Element): ResponseParts {
  const all = descendants(response);

  // Matched on local name in any namespace, so that a look-alike in a foreign namespace counts too.
  if (all.some((el) => el.localName === 'EncryptedAssertion')) throw invalid('encrypted assertions are not supported');
  const assertions = all.filter((el) => el.localName === 'Assertion');
  if (assertions.length !== 1) throw invalid(`expected exactly one Assertion in the response, found ${assertions.length}`);
  const assertion = assertions[0];
  if (!is(assertion, NS.assertion, 'Assertion') || assertion.parentNode !== response) {
    throw invalid('the Assertion must be a direct child of the Response');
  }

  rejectDuplicateIds(all);

  const signatures = all.filter((el) => el.localName === 'Signature');
  for (const s of signatures) {
    if (!is(s, NS.dsig, 'Signature') || (s.parentNode !== assertion && s.parentNode !== response)) {
      throw invalid('a Signature may only appear directly inside the Response or the Assertion');
    }
  }
  const assertionSignatures = signatures.filter((s) => s.parentNode === assertion);
  const responseSignatures = signatures.filter((s) => s.parentNode === response);
  if (assertionSignatures.length === 0) throw invalid('the assertion is not signed (a signature on the Response only is not accepted)');
  if (assertionSignatures.length > 1 || responseSignatures.length > 1) throw invalid('an element carries more than one Signature');

  // Canonicalisation drops comments before digesting, so a comment inside a signed value changes
  // what naive readers see without breaking the signature (the 2018 NameID truncation bugs).
  if (hasNodeOfType(assertion, COMMENT_NODE) || hasNodeOfType(assertion, PROCESSING_INSTRUCTION_NODE)) {
    throw invalid('comments and processing instructions are not allowed inside the assertion');
  }

  return { response, assertion, assertionSignature: assertionSignatures[0], responseSignature: responseSignatures[0] };
}

function rejectDuplicateIds(elements: Element[]): void {
  const seen = new Set<string>();
  for (const el of elements) {
    for (let i = 0; i < el.attributes.length; i++) {
      const a = el.attributes.item(i)!;
      if (!ID_ATTRIBUTE_NAMES.has(a.localName ?? a.name)) continue;
      if (seen.has(a.value)) throw invalid('the document contains duplicate IDs');
      seen.add(a.value);
    }
  }
}
