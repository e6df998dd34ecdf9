// Reads and checks the assertion from the XML that the signature verifier returned (the canonical
// form of exactly what the IdP signed), so no value can come from content added around it. The
// rules are the Web Browser SSO profile's (saml-profiles 4.1.4.3) plus this service's
// (docs/sso-saml.md): email NameID only, one bearer confirmation bound to our ACS and our request,
// our entity ID as audience.
import { SamlError } from './errors.js';
import { EMAIL_NAMEID_FORMAT, type SpConfig } from './sp.js';
import { checkWindow, parseSamlTime } from './time.js';
import { NS, allChildren, attr, children, is, parseStrictXml, textOnly } from './xml.js';

export interface AssertionContext {
  idpEntityId: string;
  sp: SpConfig;
  requestId: string;
  now: Date;
  clockSkewMs: number;
}

export interface AssertionValues {
  assertionId: string;
  /** The email NameID, trimmed, exactly as the IdP signed it (not lower-cased). */
  nameId: string;
  nameIdFormat: string;
  issuer: string;
  /** Attribute values by attribute Name, in document order; only plain-text values. */
  attributes: Record<string, string[]>;
  /** When this assertion stops being acceptable (before skew); keep replay records until then + skew. */
  notOnOrAfter: Date;
  sessionIndex?: string;
}

const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const ENTITY_FORMAT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:entity';
// Conditions we understand; saml-core 2.5.1.5 makes an assertion with any other condition invalid
// for a relying party that cannot evaluate it. OneTimeUse is honoured by the caller's replay store.
const KNOWN_CONDITIONS = new Set(['AudienceRestriction', 'OneTimeUse', 'ProxyRestriction']);

const invalid = (reason: string) => new SamlError('invalid_saml_response', reason);

export function readSignedAssertion(signedXml: string, expectedId: string, ctx: AssertionContext): AssertionValues {
  const assertion = parseStrictXml(signedXml, (r) => invalid(`signed assertion: ${r}`)).documentElement;
  if (!is(assertion, NS.assertion, 'Assertion') || attr(assertion, 'ID') !== expectedId) {
    throw invalid('the signed reference is not the assertion in the response');
  }
  if (attr(assertion, 'Version') !== '2.0') throw invalid('the assertion is not SAML version 2.0');
  const issueInstant = parseSamlTime(attr(assertion, 'IssueInstant') ?? '', 'the assertion IssueInstant');
  checkWindow({ notBefore: issueInstant }, ctx.now, ctx.clockSkewMs, 'the assertion (IssueInstant)');

  const issuer = checkIssuer(assertion, ctx.idpEntityId);
  const subject = one(assertion, 'Subject');
  const { nameId, nameIdFormat } = readNameId(subject);
  const confirmedUntil = checkBearerConfirmation(subject, ctx);
  const conditionsUntil = checkConditions(one(assertion, 'Conditions'), ctx);
  const sessionIndex = checkAuthnStatements(assertion, ctx);

  return {
    assertionId: expectedId,
    nameId,
    nameIdFormat,
    issuer,
    attributes: readAttributes(assertion),
    // The assertion stops being acceptable at the earlier of the two limits; callers size their
    // replay-cache entries from this.
    notOnOrAfter: conditionsUntil && conditionsUntil < confirmedUntil ? conditionsUntil : confirmedUntil,
    ...(sessionIndex !== undefined && { sessionIndex }),
  };
}

function one(parent: Element, localName: string): Element {
  const found = children(parent, NS.assertion, localName);
  if (found.length !== 1) throw invalid(`expected one saml:${localName} in ${parent.localName}, found ${found.length}`);
  return found[0];
}

function checkIssuer(assertion: Element, idpEntityId: string): string {
  const el = one(assertion, 'Issuer');
  const format = attr(el, 'Format');
  if (format !== undefined && format !== ENTITY_FORMAT) throw invalid('the assertion Issuer is not an entity ID');
  const issuer = textOnly(el)?.trim();
  if (issuer !== idpEntityId) throw invalid('the assertion Issuer is not the IdP entity ID from the metadata');
  return issuer;
}

function readNameId(subject: Element): { nameId: string; nameIdFormat: string } {
  if (children(subject, NS.assertion, 'EncryptedID').length) throw invalid('encrypted NameIDs are not supported');
  const el = one(subject, 'NameID');
  const nameIdFormat = attr(el, 'Format') ?? '';
  if (nameIdFormat !== EMAIL_NAMEID_FORMAT) throw invalid(`the NameID format must be ${EMAIL_NAMEID_FORMAT}`);
  const nameId = textOnly(el)?.trim();
  if (!nameId || !/^[^\s@]+@[^\s@]+$/.test(nameId)) throw invalid('the NameID is not an email address');
  return { nameId, nameIdFormat };
}

/** Returns the confirmation's NotOnOrAfter, which the profile requires for bearer assertions. */
function checkBearerConfirmation(subject: Element, ctx: AssertionContext): Date {
  const bearers = children(subject, NS.assertion, 'SubjectConfirmation').filter((c) => attr(c, 'Method') === BEARER);
  if (bearers.length !== 1) throw invalid(`expected one bearer SubjectConfirmation, found ${bearers.length}`);
  const data = one(bearers[0], 'SubjectConfirmationData');
  if (attr(data, 'Recipient') !== ctx.sp.acsUrl) throw invalid('the SubjectConfirmationData Recipient is not our ACS URL');
  const inResponseTo = attr(data, 'InResponseTo');
  if (inResponseTo === undefined) throw invalid('the SubjectConfirmationData has no InResponseTo (IdP-initiated sign-in is not supported)');
  if (inResponseTo !== ctx.requestId) throw invalid('the SubjectConfirmationData InResponseTo does not match the pending AuthnRequest');
  const notOnOrAfterText = attr(data, 'NotOnOrAfter');
  if (notOnOrAfterText === undefined) throw invalid('the SubjectConfirmationData has no NotOnOrAfter');
  const notBeforeText = attr(data, 'NotBefore');
  const window = {
    notOnOrAfter: parseSamlTime(notOnOrAfterText, 'SubjectConfirmationData NotOnOrAfter'),
    notBefore: notBeforeText === undefined ? undefined : parseSamlTime(notBeforeText, 'SubjectConfirmationData NotBefore'),
  };
  checkWindow(window, ctx.now, ctx.clockSkewMs, 'the subject confirmation');
  return window.notOnOrAfter;
}

/** Returns Conditions' NotOnOrAfter when it has one. */
function checkConditions(conditions: Element, ctx: AssertionContext): Date | undefined {
  const nb = attr(conditions, 'NotBefore');
  const noa = attr(conditions, 'NotOnOrAfter');
  const window = {
    notBefore: nb === undefined ? undefined : parseSamlTime(nb, 'Conditions NotBefore'),
    notOnOrAfter: noa === undefined ? undefined : parseSamlTime(noa, 'Conditions NotOnOrAfter'),
  };
  checkWindow(window, ctx.now, ctx.clockSkewMs, 'the assertion');

  for (const c of allChildren(conditions)) {
    if (c.namespaceURI !== NS.assertion || !KNOWN_CONDITIONS.has(c.localName)) {
      throw invalid(`the assertion has a condition this SP cannot evaluate (${c.localName})`);
    }
  }
  // Every AudienceRestriction must name us (saml-core 2.5.1.4); at least one must exist, or an
  // assertion minted for any other SP of the same IdP would be accepted here.
  const restrictions = children(conditions, NS.assertion, 'AudienceRestriction');
  if (restrictions.length === 0) throw invalid('the assertion has no AudienceRestriction');
  for (const r of restrictions) {
    const audiences = children(r, NS.assertion, 'Audience').map((a) => textOnly(a)?.trim());
    if (!audiences.includes(ctx.sp.entityId)) throw invalid('the assertion Audience is not our SP entity ID');
  }
  return window.notOnOrAfter;
}

/** The profile requires an AuthnStatement; returns the first SessionIndex. */
function checkAuthnStatements(assertion: Element, ctx: AssertionContext): string | undefined {
  const statements = children(assertion, NS.assertion, 'AuthnStatement');
  if (statements.length === 0) throw invalid('the assertion has no AuthnStatement');
  for (const s of statements) {
    const until = attr(s, 'SessionNotOnOrAfter');
    if (until !== undefined) checkWindow({ notOnOrAfter: parseSamlTime(until, 'SessionNotOnOrAfter') }, ctx.now, ctx.clockSkewMs, 'the IdP session');
  }
  return attr(statements[0], 'SessionIndex');
}

/**
 * Attribute values by attribute Name. Values that are not plain text (structured values such as a
 * nested NameID) and nil values are skipped: nothing downstream can map them to a string.
 */
function readAttributes(assertion: Element): Record<string, string[]> {
  // A Map, then fromEntries: a plain object would let an attribute named "__proto__" rewrite the
  // result's prototype.
  const byName = new Map<string, string[]>();
  for (const statement of children(assertion, NS.assertion, 'AttributeStatement')) {
    if (children(statement, NS.assertion, 'EncryptedAttribute').length) throw invalid('encrypted attributes are not supported');
    for (const a of children(statement, NS.assertion, 'Attribute')) {
      const name = attr(a, 'Name');
      if (!name) continue;
      const values = byName.get(name) ?? [];
      for (const v of children(a, NS.assertion, 'AttributeValue')) {
        const text = textOnly(v);
        if (text !== null && v.getAttributeNS('http://www.w3.org/2001/XMLSchema-instance', 'nil') !== 'true') values.push(text);
      }
      byName.set(name, values);
    }
  }
  return Object.fromEntries(byName);
}
