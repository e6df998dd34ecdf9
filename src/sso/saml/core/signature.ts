// Verifies one enveloped XML signature (on the Assertion, or on the Response) against the IdP's
// metadata certificates with xml-crypto, and returns exactly the bytes that were signed.
//
// Why not samlify's verifier: it accepts a signature on the Response alone as covering the
// assertion, falls back to the first metadata certificate when KeyInfo is absent (breaking
// rotation), and cannot restrict algorithms (it sets signatureAlgorithm, which loadSignature then
// overwrites with whatever the document declares, SHA-1 included).
import { X509Certificate } from 'node:crypto';
import { SignedXml } from 'xml-crypto';
import { SamlError } from './errors.js';
import { NS, allChildren, attr, children } from './xml.js';

const ALLOWED_SIGNATURE = ['http://www.w3.org/2001/04/xmldsig-more#rsa-sha256', 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512'];
const ALLOWED_DIGEST = ['http://www.w3.org/2001/04/xmlenc#sha256', 'http://www.w3.org/2001/04/xmlenc#sha512'];
// Only comment-less canonicalisation: "#WithComments" variants have no use in SAML.
const ALLOWED_C14N = ['http://www.w3.org/2001/10/xml-exc-c14n#', 'http://www.w3.org/TR/2001/REC-xml-c14n-20010315'];
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';
const ALLOWED_TRANSFORMS = [ENVELOPED, ...ALLOWED_C14N];

/**
 * Checks that `signature` is a well-formed enveloped signature over `signed` (referenced by its ID)
 * made with one of `certs` (base64 DER), and returns the canonical form of what was signed.
 * Callers must read values from that returned XML, never from `signed`, so that nothing an attacker
 * added to the document after signing can be read (signature wrapping).
 *
 * `documentXml` must be the exact text that `signed` and `signature` were parsed from.
 */
export function verifyEnvelopedSignature(documentXml: string, signed: Element, signature: Element, certs: string[], what: 'assertion' | 'response'): string {
  const fail = (reason: string) => new SamlError('invalid_saml_response', `${what} signature: ${reason}`);
  checkShape(signature, attr(signed, 'ID'), fail);

  for (const cert of certs) {
    const sig = new SignedXml({ publicCert: certToPem(cert), getCertFromKeyInfo: () => null });
    restrictAlgorithms(sig);
    try {
      sig.loadSignature(signature);
    } catch {
      // xml-crypto's own shape checks (DigestValue missing or repeated...) throw plain Errors
      throw fail('the Signature is malformed');
    }
    let digestsMatch: boolean;
    try {
      digestsMatch = sig.checkSignature(documentXml);
    } catch {
      // xml-crypto throws when the SignatureValue does not verify with this key: try the next one.
      continue;
    }
    // A false return means a digest mismatch, which no certificate can fix.
    if (!digestsMatch) throw fail('the signed content was altered after signing (digest mismatch)');
    const signedXml = sig.getSignedReferences();
    if (signedXml.length !== 1) throw fail('expected exactly one signed reference');
    return signedXml[0];
  }
  throw fail('not made by any signing certificate in the IdP metadata');
}

/**
 * The shape a SAML IdP produces (saml-core 5.4): one Reference, to the enclosing element's ID, with
 * the enveloped-signature transform and allowed algorithms only. Anything else (extra references,
 * ds:Object payloads, XPath/XSLT transforms, SHA-1) is refused before any crypto runs.
 */
function checkShape(signature: Element, id: string | undefined, fail: (reason: string) => SamlError): void {
  if (!id) throw fail('the signed element has no ID');
  for (const child of allChildren(signature)) {
    const known = child.namespaceURI === NS.dsig && ['SignedInfo', 'SignatureValue', 'KeyInfo'].includes(child.localName);
    if (!known) throw fail(`unexpected <${child.localName}> inside the Signature`);
  }
  const signedInfo = exactlyOne(signature, 'SignedInfo', fail);
  exactlyOne(signature, 'SignatureValue', fail);

  const c14n = algorithm(exactlyOne(signedInfo, 'CanonicalizationMethod', fail));
  if (!ALLOWED_C14N.includes(c14n)) throw fail(`canonicalization ${c14n} is not allowed`);
  const sigAlg = algorithm(exactlyOne(signedInfo, 'SignatureMethod', fail));
  if (!ALLOWED_SIGNATURE.includes(sigAlg)) throw fail(`signature algorithm ${sigAlg} is not allowed (RSA-SHA256 or RSA-SHA512 only)`);

  const ref = exactlyOne(signedInfo, 'Reference', fail);
  if (attr(ref, 'URI') !== `#${id}`) throw fail('the Reference does not point at the signed element');
  const digest = algorithm(exactlyOne(ref, 'DigestMethod', fail));
  exactlyOne(ref, 'DigestValue', fail);
  if (!ALLOWED_DIGEST.includes(digest)) throw fail(`digest algorithm ${digest} is not allowed (SHA-256 or SHA-512 only)`);
  const transforms = children(ref, NS.dsig, 'Transforms').flatMap((t) => children(t, NS.dsig, 'Transform')).map(algorithm);
  const bad = transforms.find((t) => !ALLOWED_TRANSFORMS.includes(t));
  if (bad !== undefined) throw fail(`transform ${bad} is not allowed`);
  if (!transforms.includes(ENVELOPED)) throw fail('the enveloped-signature transform is missing');
}

function exactlyOne(parent: Element, localName: string, fail: (reason: string) => SamlError): Element {
  const found = children(parent, NS.dsig, localName);
  if (found.length !== 1) throw fail(`expected one ds:${localName} in ${parent.localName}, found ${found.length}`);
  return found[0];
}

const algorithm = (el: Element) => attr(el, 'Algorithm') ?? '';

/** Belt and braces: even if the shape check missed something, xml-crypto cannot run other algorithms. */
function restrictAlgorithms(sig: SignedXml): void {
  const keep = <T>(table: Record<string, T>, allowed: string[]) => Object.fromEntries(Object.entries(table).filter(([uri]) => allowed.includes(uri)));
  sig.SignatureAlgorithms = keep(sig.SignatureAlgorithms, ALLOWED_SIGNATURE);
  sig.HashAlgorithms = keep(sig.HashAlgorithms, ALLOWED_DIGEST);
  sig.CanonicalizationAlgorithms = keep(sig.CanonicalizationAlgorithms, ALLOWED_TRANSFORMS);
}

function certToPem(b64Der: string): string {
  // Round-trip through node:crypto so a malformed stored certificate fails loudly here.
  return new X509Certificate(Buffer.from(b64Der, 'base64')).toString();
}
