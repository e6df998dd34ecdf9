import { beforeAll, describe, expect, it } from 'vitest';
import { SignedXml } from 'xml-crypto';
import { DOMParser } from '@xmldom/xmldom';
import { verifyResponseXml, verifySamlResponse } from '../../../src/sso/saml/core/verify-response.js';
import { testKeys, type SignMode } from '../../helpers/saml-idp.js';
import { b64, expectations, responseOptions, testIdp, userEmail, warmUpSchemaValidator } from './context.js';
import { applyXsw, naiveNameId, XSW_VARIANTS, type XswVariant } from './xsw.js';

const attacker = 'mallory@corp.example';
// XSW1-2 wrap a Response signature, XSW3-8 an Assertion signature; each is also tried on responses
// signed on both levels, the layout most IdPs use.
const cases: Array<[XswVariant, SignMode]> = XSW_VARIANTS.flatMap((v): Array<[XswVariant, SignMode]> =>
  v === 'XSW1' || v === 'XSW2' ? [[v, 'response'], [v, 'both']] : [[v, 'assertion'], [v, 'both']],
);
const attack = (variant: XswVariant, sign: SignMode) => applyXsw(variant, testIdp.responseXml(responseOptions({ sign })), attacker);

beforeAll(warmUpSchemaValidator, 60_000);

describe('signature wrapping (XSW1..XSW8)', () => {
  it.each(cases)('%s (signed: %s) is refused', async (variant, sign) => {
    await expect(verifySamlResponse(b64(attack(variant, sign)), expectations())).rejects.toMatchObject({ code: 'invalid_saml_response' });
  });

  it.each(cases)('%s (signed: %s) is refused by the structural checks alone, without the schema', (variant, sign) => {
    expect(() => verifyResponseXml(attack(variant, sign), expectations())).toThrow(expect.objectContaining({ code: 'invalid_saml_response' }));
  });

  // Guards the guard: if the builders produced merely broken documents, the refusals above would
  // prove nothing. For XSW1-6 the IdP's signature still verifies under plain xml-crypto while a
  // naive reader sees the attacker's NameID; XSW7-8 duplicate the signed ID, which xml-crypto
  // itself already refuses.
  it.each(cases.filter(([v, sign]) => sign !== 'both' && !['XSW7', 'XSW8'].includes(v)))(
    '%s (signed: %s) is a working attack against a naive verifier',
    (variant, sign) => {
      const xml = attack(variant, sign);
      expect(naiveNameId(xml)).toBe(attacker);
      expect(naiveSignatureCheck(xml)).toBe(true);
    },
  );

  it('the unwrapped responses verify, so the refusals are due to the wrapping', async () => {
    for (const sign of ['assertion', 'both'] as const) {
      await expect(verifySamlResponse(b64(testIdp.responseXml(responseOptions({ sign }))), expectations())).resolves.toMatchObject({ nameId: userEmail });
    }
  });
});

/** What a verifier without structural checks does: verify the first signature in the document. */
function naiveSignatureCheck(xml: string): boolean {
  const doc = new DOMParser().parseFromString(xml, 'text/xml');
  const signature = doc.getElementsByTagNameNS('http://www.w3.org/2000/09/xmldsig#', 'Signature')[0];
  const sig = new SignedXml({ publicCert: testKeys.primary.certPem });
  sig.loadSignature(signature);
  return sig.checkSignature(xml);
}
