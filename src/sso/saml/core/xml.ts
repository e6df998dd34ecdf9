// Strict XML parsing and namespace-aware DOM helpers shared by the metadata reader and the response
// verifier. Everything here matches elements by namespace URI *and* local name: matching on local
// name alone (as many SAML libraries do) lets an attacker slip look-alike elements from another
// namespace past the checks.
import { DOMParser } from '@xmldom/xmldom';

export const NS = {
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  metadata: 'urn:oasis:names:tc:SAML:2.0:metadata',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
} as const;

const ELEMENT_NODE = 1;
const TEXT_NODE = 3;
const CDATA_SECTION_NODE = 4;

/**
 * Parses XML, refusing anything a SAML peer has no reason to send: a DTD (the vehicle for XXE and
 * entity-expansion attacks) and any markup the parser would otherwise "repair" (xmldom is lenient
 * by default and reports such repairs only as warnings). `fail` builds the error to throw, so each
 * caller keeps its own error code.
 */
export function parseStrictXml(xml: string, fail: (reason: string) => Error): Document {
  assertNoDoctype(xml, fail);
  const reject = (msg: string) => {
    throw new Error(msg);
  };
  let doc: Document;
  try {
    doc = new DOMParser({ errorHandler: { warning: reject, error: reject, fatalError: reject } }).parseFromString(xml, 'text/xml');
  } catch {
    throw fail('the document is not well-formed XML');
  }
  if (!doc.documentElement) throw fail('the document has no root element');
  return doc;
}

/** Also run before handing a document to any other XML tool (libxml2 would expand entities). */
export function assertNoDoctype(xml: string, fail: (reason: string) => Error): void {
  if (/<!DOCTYPE/i.test(xml)) throw fail('a DOCTYPE declaration is not allowed');
}

const isElement = (n: Node | null | undefined): n is Element => !!n && n.nodeType === ELEMENT_NODE;

export function is(el: Element, ns: string, localName: string): boolean {
  return el.namespaceURI === ns && el.localName === localName;
}

/** Direct child elements with the given name (no descendants: position in the tree matters). */
export function children(parent: Element, ns: string, localName: string): Element[] {
  return allChildren(parent).filter((c) => is(c, ns, localName));
}

export function allChildren(parent: Element): Element[] {
  const out: Element[] = [];
  for (let n = parent.firstChild; n; n = n.nextSibling) if (isElement(n)) out.push(n);
  return out;
}

/** Every element below `root` (and `root` itself), in document order. */
export function descendants(root: Element): Element[] {
  const out: Element[] = [];
  const stack: Element[] = [root];
  while (stack.length) {
    const el = stack.pop()!;
    out.push(el);
    stack.push(...allChildren(el).reverse());
  }
  return out;
}

/** Whether any node of the given DOM node type (comment, processing instruction) lies below `root`. */
export function hasNodeOfType(root: Node, nodeType: number): boolean {
  for (let n = root.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === nodeType || hasNodeOfType(n, nodeType)) return true;
  }
  return false;
}

/**
 * The text of an element that contains nothing but text, or null when it has child elements,
 * comments or processing instructions. Values are never taken from mixed content: readers that
 * disagree about which text node counts are how comment-truncation attacks on NameID work.
 */
export function textOnly(el: Element): string | null {
  let text = '';
  for (let n = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType !== TEXT_NODE && n.nodeType !== CDATA_SECTION_NODE) return null;
    text += (n as CharacterData).data;
  }
  return text;
}

/** An attribute value, or undefined when absent (xmldom returns '' for absent attributes). */
export function attr(el: Element, name: string): string | undefined {
  return el.hasAttribute(name) ? el.getAttribute(name)! : undefined;
}

export function escapeXmlAttr(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
