// A programmable SAML identity provider for tests. It publishes metadata and mints fresh
// SAMLResponses for whatever SP and request a test names, signed with fixed RSA keys from
// test/fixtures/saml. Responses are assembled by hand and signed with xml-crypto (rather than with
// samlify's IdP API) because the negative tests need to break exactly one rule at a time: sign the
// wrong element, point at the wrong audience, omit InResponseTo, use an unknown key, encrypt.
import { constants, createCipheriv, publicEncrypt, randomBytes, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inflateRawSync } from 'node:zlib';
import { DOMParser } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import type { SpConfig } from '../../src/sso/saml/core/sp.js';

const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
const SIGNATURE_ALGORITHMS = {
  'rsa-sha1': ['http://www.w3.org/2000/09/xmldsig#rsa-sha1', 'http://www.w3.org/2000/09/xmldsig#sha1'],
  'rsa-sha256': ['http://www.w3.org/2001/04/xmldsig-more#rsa-sha256', 'http://www.w3.org/2001/04/xmlenc#sha256'],
  'rsa-sha512': ['http://www.w3.org/2001/04/xmldsig-more#rsa-sha512', 'http://www.w3.org/2001/04/xmlenc#sha512'],
} as const;

export interface TestKeyPair {
  name: string;
  privateKeyPem: string;
  certPem: string;
  /** base64 DER, the form IdpMetadata.signingCerts uses. */
  certB64: string;
}

function loadKeyPair(name: string): TestKeyPair {
  const file = (ext: string) => readFileSync(new URL(`../fixtures/saml/${name}.${ext}.pem`, import.meta.url), 'utf8');
  const certPem = file('cert');
  return { name, privateKeyPem: file('key'), certPem, certB64: new X509Certificate(certPem).raw.toString('base64') };
}

/** Fixed keys (generated once with openssl, 2048-bit RSA, self-signed for 100 years). */
export const testKeys = {
  primary: loadKeyPair('idp-primary'),
  /** A second IdP key, for certificate-rotation tests. */
  secondary: loadKeyPair('idp-secondary'),
  /** Never published in any metadata. */
  attacker: loadKeyPair('attacker'),
};

export type SignMode = 'assertion' | 'response' | 'both' | 'none';

export interface ResponseOptions {
  sp: SpConfig;
  /** The AuthnRequest ID being answered; default for both InResponseTo attributes. */
  requestId: string;
  nameId: string;
  nameIdFormat?: string;
  attributes?: Record<string, string[]>;
  /** Which elements carry an enveloped signature. Default 'assertion'. */
  sign?: SignMode;
  signWith?: TestKeyPair;
  signatureAlgorithm?: keyof typeof SIGNATURE_ALGORITHMS;
  /** Overrides; each defaults to the correct value for `sp` and this IdP. */
  audience?: string;
  recipient?: string;
  destination?: string;
  issuer?: string;
  /** InResponseTo on the Response / on SubjectConfirmationData; null leaves the attribute out. */
  responseInResponseTo?: string | null;
  subjectInResponseTo?: string | null;
  /** Reference time for IssueInstant/NotBefore/NotOnOrAfter; default now. */
  now?: Date;
  /** Added to every timestamp, to make the response expired (<0) or not yet valid (>0). */
  timeShiftMs?: number;
  /** Length of the validity windows. Default 5 minutes. */
  validityMs?: number;
  sessionIndex?: string;
  statusCode?: string;
  /** Replace the Assertion with an EncryptedAssertion (AES-256-GCM, key wrapped with RSA-OAEP). */
  encryptAssertion?: boolean;
}

export interface TestIdpOptions {
  entityId?: string;
  ssoRedirectUrl?: string;
  /** Certificates published as signing keys in the metadata. Default [primary]. */
  publishedKeys?: TestKeyPair[];
}

export class TestIdp {
  readonly entityId: string;
  readonly ssoRedirectUrl: string;
  readonly publishedKeys: TestKeyPair[];

  constructor(opts: TestIdpOptions = {}) {
    this.entityId = opts.entityId ?? 'https://idp.test.example/metadata';
    this.ssoRedirectUrl = opts.ssoRedirectUrl ?? 'https://idp.test.example/sso/redirect';
    this.publishedKeys = opts.publishedKeys ?? [testKeys.primary];
  }

  /** IdP metadata; `withSigningKeys: false` publishes an encryption key only. */
  metadataXml(opts: { withSigningKeys?: boolean } = {}): string {
    const use = opts.withSigningKeys === false ? 'encryption' : 'signing';
    const keys = this.publishedKeys
      .map((k) => `<md:KeyDescriptor use="${use}"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${k.certB64}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`)
      .join('');
    return (
      `<?xml version="1.0" encoding="UTF-8"?>` +
      `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${esc(this.entityId)}">` +
      `<md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">${keys}` +
      `<md:NameIDFormat>${EMAIL_FORMAT}</md:NameIDFormat>` +
      `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${esc(this.ssoRedirectUrl)}"/>` +
      `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${esc(this.ssoRedirectUrl)}"/>` +
      `</md:IDPSSODescriptor></md:EntityDescriptor>`
    );
  }

  /** A fresh SAMLResponse as the base64 value of the HTTP-POST form field. */
  signedResponse(opts: ResponseOptions): string {
    return Buffer.from(this.responseXml(opts)).toString('base64');
  }

  /** The same response as XML, for tests that tamper with it before encoding. */
  responseXml(opts: ResponseOptions): string {
    const sign = opts.sign ?? 'assertion';
    const key = opts.signWith ?? this.publishedKeys[0];
    const alg = opts.signatureAlgorithm ?? 'rsa-sha256';
    const ids = { response: newId(), assertion: newId() };
    const at = (offsetMs: number) => new Date((opts.now ?? new Date()).getTime() + (opts.timeShiftMs ?? 0) + offsetMs).toISOString();
    const validity = opts.validityMs ?? 5 * 60_000;
    const pick = <T>(v: T | null | undefined, fallback: T) => (v === undefined ? fallback : v);
    const respIrt = pick(opts.responseInResponseTo, opts.requestId);
    const subjIrt = pick(opts.subjectInResponseTo, opts.requestId);
    const issuer = opts.issuer ?? this.entityId;

    let assertion =
      `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ID="${ids.assertion}" Version="2.0" IssueInstant="${at(0)}">` +
      `<saml:Issuer>${esc(issuer)}</saml:Issuer>` +
      `<saml:Subject><saml:NameID Format="${esc(opts.nameIdFormat ?? EMAIL_FORMAT)}">${esc(opts.nameId)}</saml:NameID>` +
      `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">` +
      `<saml:SubjectConfirmationData NotOnOrAfter="${at(validity)}" Recipient="${esc(opts.recipient ?? opts.sp.acsUrl)}"${subjIrt === null ? '' : ` InResponseTo="${esc(subjIrt)}"`}/>` +
      `</saml:SubjectConfirmation></saml:Subject>` +
      `<saml:Conditions NotBefore="${at(-30_000)}" NotOnOrAfter="${at(validity)}">` +
      `<saml:AudienceRestriction><saml:Audience>${esc(opts.audience ?? opts.sp.entityId)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
      `<saml:AuthnStatement AuthnInstant="${at(0)}" SessionIndex="${esc(opts.sessionIndex ?? newId())}">` +
      `<saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
      attributeStatement(opts.attributes ?? {}) +
      `</saml:Assertion>`;
    if (sign === 'assertion' || sign === 'both') assertion = signEnveloped(assertion, 'Assertion', key, alg);
    if (opts.encryptAssertion) assertion = encryptAssertion(assertion, testKeys.secondary);

    let response =
      `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${ids.response}" Version="2.0" IssueInstant="${at(0)}" Destination="${esc(opts.destination ?? opts.sp.acsUrl)}"${respIrt === null ? '' : ` InResponseTo="${esc(respIrt)}"`}>` +
      `<saml:Issuer>${esc(issuer)}</saml:Issuer>` +
      `<samlp:Status><samlp:StatusCode Value="${esc(opts.statusCode ?? SUCCESS)}"/></samlp:Status>` +
      assertion +
      `</samlp:Response>`;
    if (sign === 'response' || sign === 'both') response = signEnveloped(response, 'Response', key, alg);
    return response;
  }
}

/** What an IdP reads from our HTTP-Redirect AuthnRequest URL (to answer it in tests). */
export function readAuthnRequest(redirectUrl: string): { id: string; issuer: string; acsUrl: string; destination: string; relayState: string | null; xml: string } {
  const url = new URL(redirectUrl);
  const encoded = url.searchParams.get('SAMLRequest');
  if (!encoded) throw new Error('no SAMLRequest in the URL');
  const xml = inflateRawSync(Buffer.from(encoded, 'base64')).toString('utf8');
  const req = new DOMParser().parseFromString(xml, 'text/xml').documentElement!;
  const issuer = req.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:assertion', 'Issuer')[0];
  return {
    id: req.getAttribute('ID') ?? '',
    issuer: issuer?.textContent ?? '',
    acsUrl: req.getAttribute('AssertionConsumerServiceURL') ?? '',
    destination: req.getAttribute('Destination') ?? '',
    relayState: url.searchParams.get('RelayState'),
    xml,
  };
}

function attributeStatement(attributes: Record<string, string[]>): string {
  const entries = Object.entries(attributes);
  if (entries.length === 0) return '';
  const attrs = entries
    .map(
      ([name, values]) =>
        `<saml:Attribute Name="${esc(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic">` +
        values.map((v) => `<saml:AttributeValue xsi:type="xs:string">${esc(v)}</saml:AttributeValue>`).join('') +
        `</saml:Attribute>`,
    )
    .join('');
  return `<saml:AttributeStatement>${attrs}</saml:AttributeStatement>`;
}

/** Enveloped signature placed right after the element's Issuer, as saml-core 5.4.1 describes. */
function signEnveloped(xml: string, localName: 'Assertion' | 'Response', key: TestKeyPair, alg: keyof typeof SIGNATURE_ALGORITHMS): string {
  const [signatureAlgorithm, digestAlgorithm] = SIGNATURE_ALGORITHMS[alg];
  const sig = new SignedXml({
    privateKey: key.privateKeyPem,
    publicCert: key.certPem,
    signatureAlgorithm,
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  // The element is the document root here: assertions are signed on their own, then embedded,
  // as real IdPs do; exclusive canonicalisation makes the signature survive the move.
  const self = `/*[local-name(.)='${localName}']`;
  sig.addReference({
    xpath: self,
    digestAlgorithm,
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
  });
  sig.computeSignature(xml, { prefix: 'ds', location: { reference: `${self}/*[local-name(.)='Issuer']`, action: 'after' } });
  return sig.getSignedXml();
}

/** Real XML Encryption (so the document is what an IdP would send), to a key nobody here holds. */
function encryptAssertion(assertionXml: string, recipient: TestKeyPair): string {
  const aesKey = randomBytes(32);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', aesKey, iv);
  const body = Buffer.concat([iv, cipher.update(assertionXml, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  const wrappedKey = publicEncrypt({ key: recipient.certPem, padding: constants.RSA_PKCS1_OAEP_PADDING }, aesKey);
  return (
    `<saml:EncryptedAssertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion">` +
    `<xenc:EncryptedData xmlns:xenc="http://www.w3.org/2001/04/xmlenc#" Type="http://www.w3.org/2001/04/xmlenc#Element">` +
    `<xenc:EncryptionMethod Algorithm="http://www.w3.org/2009/xmlenc11#aes256-gcm"/>` +
    `<ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><xenc:EncryptedKey>` +
    `<xenc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p"/>` +
    `<xenc:CipherData><xenc:CipherValue>${wrappedKey.toString('base64')}</xenc:CipherValue></xenc:CipherData>` +
    `</xenc:EncryptedKey></ds:KeyInfo>` +
    `<xenc:CipherData><xenc:CipherValue>${body.toString('base64')}</xenc:CipherValue></xenc:CipherData>` +
    `</xenc:EncryptedData></saml:EncryptedAssertion>`
  );
}

const newId = () => `_${randomBytes(16).toString('hex')}`;

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * The IdP's metadata on a real local HTTP server, for providers saved with metadata_url. `idp`
 * can be swapped (key rotation) and `status` changed (a broken IdP) while the server runs.
 */
export async function serveMetadata(idp: TestIdp): Promise<{ url: string; idp: TestIdp; status: number; stop(): Promise<void> }> {
  const state = { idp, status: 200 };
  const server = createServer((_req, res) => {
    res.writeHead(state.status, { 'content-type': 'application/samlmetadata+xml' });
    res.end(state.status === 200 ? state.idp.metadataXml() : 'unavailable');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/saml/metadata`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

/** The browser posting the IdP's auto-submitted form to an ACS; returns where the service sends it. */
export async function postToAcs(acsUrl: string, form: Record<string, string>): Promise<URL> {
  const res = await fetch(acsUrl, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  const location = res.headers.get('location');
  if (res.status !== 303 || !location) throw new Error(`expected a 303 from the ACS, got ${res.status}: ${await res.text()}`);
  return new URL(location);
}
