import { beforeAll, describe, expect, it } from 'vitest';
import { verifyResponseXml, verifySamlResponse } from '../../../src/sso/saml/core/verify-response.js';
import { parseIdpMetadata } from '../../../src/sso/saml/core/metadata.js';
import { TestIdp, testKeys, type ResponseOptions } from '../../helpers/saml-idp.js';
import { b64, expectations, requestId, responseOptions, sp, testIdp, userEmail, warmUpSchemaValidator } from './context.js';

const verify = (samlResponse: string, overrides = {}) => verifySamlResponse(samlResponse, expectations(overrides));
const refusal = (reason: RegExp) => expect.objectContaining({ name: 'SamlError', code: 'invalid_saml_response', message: expect.stringMatching(reason) });
const refuses = async (samlResponse: string, reason: RegExp, overrides = {}) => {
  await expect(verify(samlResponse, overrides)).rejects.toEqual(refusal(reason));
};
const respond = (overrides: Partial<ResponseOptions> = {}) => testIdp.signedResponse(responseOptions(overrides));

beforeAll(warmUpSchemaValidator, 60_000);

describe('verifySamlResponse accepts', () => {
  it('a response whose assertion is signed, returning values from the signed assertion', async () => {
    const xml = testIdp.responseXml(responseOptions({ sessionIndex: '_session1' }));
    const result = await verify(b64(xml));
    expect(result).toEqual({
      responseId: expect.stringMatching(/^_/),
      assertionId: expect.stringMatching(/^_/),
      nameId: userEmail,
      nameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      issuer: testIdp.entityId,
      attributes: { email: [userEmail], givenName: ['Alice'], surname: ['Liddell'], groups: ['eng', 'admins'] },
      notOnOrAfter: expect.any(Date),
      sessionIndex: '_session1',
    });
    expect(xml).toContain(`ID="${result.responseId}"`);
    expect(xml).toContain(`ID="${result.assertionId}"`);
    expect(result.responseId).not.toBe(result.assertionId);
  });

  it('a response signed on both the Response and the Assertion', async () => {
    await expect(verify(respond({ sign: 'both' }))).resolves.toMatchObject({ nameId: userEmail });
  });

  it('RSA-SHA512 signatures', async () => {
    await expect(verify(respond({ signatureAlgorithm: 'rsa-sha512' }))).resolves.toMatchObject({ nameId: userEmail });
  });

  it('base64 wrapped at 76 columns, as some IdPs send it', async () => {
    const wrapped = respond().replace(/.{76}/g, '$&\r\n');
    await expect(verify(wrapped)).resolves.toMatchObject({ nameId: userEmail });
  });

  it('a response signed with either certificate while the IdP rotates keys', async () => {
    const rotating = new TestIdp({ publishedKeys: [testKeys.primary, testKeys.secondary] });
    const idp = parseIdpMetadata(rotating.metadataXml());
    for (const key of [testKeys.primary, testKeys.secondary]) {
      const response = rotating.signedResponse(responseOptions({ signWith: key }));
      await expect(verify(response, { idp })).resolves.toMatchObject({ nameId: userEmail });
    }
  });

  it('attribute names that collide with Object.prototype as plain data', async () => {
    const attributes = Object.fromEntries([['__proto__', ['x']], ['constructor', ['y']]]);
    const result = await verify(respond({ attributes }));
    expect(Object.getPrototypeOf(result.attributes)).toBe(Object.prototype);
    expect(Object.entries(result.attributes)).toEqual([['__proto__', ['x']], ['constructor', ['y']]]);
  });

  it('clock differences within clockSkewMs, and reports the earliest NotOnOrAfter', async () => {
    const now = new Date('2030-01-01T12:00:00Z');
    const response = respond({ now, validityMs: 120_000 });
    await expect(verify(response, { now: new Date(now.getTime() - 50_000) })).resolves.toBeTruthy();
    const result = await verify(response, { now: new Date(now.getTime() + 150_000) });
    expect(result.notOnOrAfter).toEqual(new Date(now.getTime() + 120_000));
  });
});

describe('verifySamlResponse refuses', () => {
  it('an unsigned assertion', async () => {
    await refuses(respond({ sign: 'none' }), /assertion is not signed/);
  });

  it('a signature on the Response only', async () => {
    await refuses(respond({ sign: 'response' }), /assertion is not signed/);
  });

  it('an attribute tampered with after signing', async () => {
    const xml = testIdp.responseXml(responseOptions()).replace('>admins<', '>superusers<');
    await refuses(b64(xml), /altered after signing/);
  });

  it('a NameID tampered with after signing', async () => {
    const xml = testIdp.responseXml(responseOptions()).replaceAll(`>${userEmail}<`, '>mallory@corp.example<');
    await refuses(b64(xml), /altered after signing/);
  });

  it('a comment inside the NameID, even though the signature stays valid', async () => {
    // Canonicalisation removes comments before digesting, so this edit does not break the signature.
    const owned = 'alice@corp.example.evil.test';
    const xml = testIdp.responseXml(responseOptions({ nameId: owned, attributes: {} })).replace(`>${owned}<`, '>alice@corp.example<!---->.evil.test<');
    await refuses(b64(xml), /comments/);
  });

  it('a wrong Audience', async () => {
    await refuses(respond({ audience: 'https://other-sp.example/metadata' }), /Audience/);
  });

  it('a wrong Recipient', async () => {
    await refuses(respond({ recipient: 'https://other-sp.example/acs' }), /Recipient/);
  });

  it('a wrong Destination', async () => {
    await refuses(respond({ destination: 'https://other-sp.example/acs' }), /Destination/);
  });

  it('a wrong InResponseTo on the Response', async () => {
    await refuses(respond({ responseInResponseTo: '_another_request' }), /Response InResponseTo does not match/);
  });

  it('a wrong InResponseTo in the SubjectConfirmationData', async () => {
    await refuses(respond({ subjectInResponseTo: '_another_request' }), /SubjectConfirmationData InResponseTo does not match/);
  });

  it('a response to a different pending request', async () => {
    await refuses(respond(), /InResponseTo does not match/, { requestId: '_some_other_pending_request' });
  });

  it('a missing InResponseTo (IdP-initiated)', async () => {
    await refuses(respond({ responseInResponseTo: null, subjectInResponseTo: null }), /no InResponseTo/);
    await refuses(respond({ responseInResponseTo: null }), /Response has no InResponseTo/);
    await refuses(respond({ subjectInResponseTo: null }), /SubjectConfirmationData has no InResponseTo/);
  });

  it('an expired assertion', async () => {
    await refuses(respond({ timeShiftMs: -10 * 60_000 }), /expired/);
  });

  it('an assertion that is not yet valid', async () => {
    await refuses(respond({ timeShiftMs: 10 * 60_000 }), /not yet valid/);
  });

  it('a signature by a certificate that is not in the metadata', async () => {
    await refuses(respond({ signWith: testKeys.attacker }), /not made by any signing certificate/);
    await refuses(respond({ sign: 'both', signWith: testKeys.attacker }), /not made by any signing certificate/);
  });

  it('a Response signed by an unknown key around a validly signed assertion', async () => {
    // The assertion is fine, but a present Response signature must verify too.
    const xml = testIdp.responseXml(responseOptions({ sign: 'both' }));
    const forged = testIdp.responseXml(responseOptions({ sign: 'both', signWith: testKeys.attacker }));
    const responseSig = (s: string) => /<ds:Signature[\s\S]*?<\/ds:Signature>/.exec(s.slice(s.indexOf('</saml:Issuer>')))![0];
    await refuses(b64(xml.replace(responseSig(xml), responseSig(forged))), /response signature/);
  });

  it('a non-email NameID format', async () => {
    await refuses(respond({ nameIdFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent' }), /NameID format/);
  });

  it('an email-format NameID that is not an email address', async () => {
    await refuses(respond({ nameId: 'alice' }), /not an email address/);
  });

  it('an encrypted assertion, with a clear reason', async () => {
    await refuses(respond({ encryptAssertion: true }), /encrypted assertions are not supported/);
    await refuses(respond({ encryptAssertion: true, sign: 'both' }), /encrypted assertions are not supported/);
  });

  it('SHA-1 signatures', async () => {
    await refuses(respond({ signatureAlgorithm: 'rsa-sha1' }), /rsa-sha1 is not allowed/);
  });

  it('a wrong Issuer', async () => {
    await refuses(respond({ issuer: 'https://evil-idp.example' }), /Issuer/);
  });

  it('a non-success status', async () => {
    await refuses(respond({ statusCode: 'urn:oasis:names:tc:SAML:2.0:status:Responder' }), /did not report success.*Responder/);
  });

  it('the assertion signature moved up to the Response (detached)', async () => {
    const xml = testIdp.responseXml(responseOptions());
    const sig = /<ds:Signature[\s\S]*?<\/ds:Signature>/.exec(xml)![0];
    const moved = xml.replace(sig, '').replace('</saml:Issuer><samlp:Status>', `</saml:Issuer>${sig}<samlp:Status>`);
    await refuses(b64(moved), /assertion is not signed/);
  });

  it('a DOCTYPE (entity expansion, XXE)', async () => {
    const xml = testIdp.responseXml(responseOptions());
    await refuses(b64(`<!DOCTYPE r [<!ENTITY x "y">]>${xml}`), /DOCTYPE/);
  });

  it('input that is not a base64 SAML response', async () => {
    await refuses('not base64!', /not base64/);
    await refuses(b64('<html/>'), /schemas/);
    await refuses(b64('x'.repeat(600 * 1024)), /too large/);
  });

  it('caller mistakes as programming errors, not as bad responses', async () => {
    await expect(verify(respond(), { requestId: '' })).rejects.toBeInstanceOf(TypeError);
    await expect(verify(respond(), { clockSkewMs: -1 })).rejects.toBeInstanceOf(TypeError);
  });
});

// Each layout rule on its own, bypassing the schema so that the rule itself is what refuses.
describe('the structural checks refuse', () => {
  const refusesXml = (xml: string, reason: RegExp) => expect(() => verifyResponseXml(xml, expectations())).toThrow(refusal(reason));
  const signed = (sign: ResponseOptions['sign'] = 'assertion') => testIdp.responseXml(responseOptions({ sign }));
  const signatureOf = (xml: string) => /<ds:Signature[\s\S]*?<\/ds:Signature>/.exec(xml)![0];

  it('another element carrying the assertion ID', () => {
    const xml = signed();
    const id = /<saml:Assertion [^>]*ID="([^"]+)"/.exec(xml)![1];
    refusesXml(xml.replace('<samlp:Status>', `<samlp:Status ID="${id}">`), /duplicate IDs/);
  });

  it('an assertion look-alike in a foreign namespace', () => {
    refusesXml(signed().replace('<samlp:Status>', '<evil:Assertion xmlns:evil="urn:evil"/><samlp:Status>'), /exactly one Assertion/);
  });

  it('a signature moved below the assertion root', () => {
    const xml = signed();
    const sig = signatureOf(xml);
    refusesXml(xml.replace(sig, '').replace('<saml:Subject>', `<saml:Subject>${sig}`), /Signature may only appear/);
  });

  it('a Response signature moved into the assertion (it verifies, but over the wrong element)', () => {
    const xml = signed('response');
    const sig = signatureOf(xml);
    const moved = xml.replace(sig, '').replace(/(<saml:Assertion [^>]*><saml:Issuer>[^<]*<\/saml:Issuer>)/, `$1${sig}`);
    refusesXml(moved, /Reference does not point at the signed element/);
  });

  it('a payload carried inside the signature', () => {
    const xml = signed();
    refusesXml(xml.replace('</ds:SignatureValue>', '</ds:SignatureValue><ds:Object>payload</ds:Object>'), /unexpected <Object>/);
  });

  // Found by fuzzing: xml-crypto throws plain Errors for these, which must not escape as crashes.
  it('a Reference without a DigestValue, or with two', () => {
    const xml = signed();
    const digest = /<ds:DigestValue>[^<]*<\/ds:DigestValue>/.exec(xml)![0];
    refusesXml(xml.replace(digest, ''), /expected one ds:DigestValue/);
    refusesXml(xml.replace(digest, digest + digest), /expected one ds:DigestValue/);
  });
});

describe('the test IdP', () => {
  it('produces responses addressed to the SP and request it was given', () => {
    const xml = testIdp.responseXml(responseOptions());
    expect(xml).toContain(`Destination="${sp.acsUrl}"`);
    expect(xml).toContain(`InResponseTo="${requestId}"`);
    expect(xml).toContain(`<saml:Audience>${sp.entityId}</saml:Audience>`);
  });
});
