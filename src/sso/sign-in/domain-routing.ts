// Email domains of SSO providers: validation on save, and choosing the provider at sign-in.
// A domain matches itself and every subdomain of it; when several providers' domains match, the
// longest (most specific) wins, so "eu.acme.com" can go to another IdP than "acme.com".

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Lower-cases and checks a hostname (at least two labels, LDH rules, ≤ 253 chars); null if invalid. */
export function normalizeDomain(input: string): string | null {
  const d = input.trim().toLowerCase().replace(/\.$/, '');
  if (d.length === 0 || d.length > 253) return null;
  const labels = d.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return null;
  // the top-level label is never all digits, which also refuses IPv4 literals
  if (/^\d+$/.test(labels[labels.length - 1])) return null;
  return d;
}

/**
 * An IdP's email in one spelling: one `@`, a local part of 1 to 64 characters without spaces,
 * controls or quotes, and a domain as normalizeDomain has it (lower case, no trailing dot). Null
 * when it is not such an address. Before 2026-11-29 an IdP's `ceo@acme.com@evil.test` was taken as
 * an address of evil.test, and `victim@corp.test.` as another account than `victim@corp.test`
 * (found by review).
 */
export function canonicalEmail(email: string): string | null {
  const parts = email.trim().split('@');
  if (parts.length !== 2) return null;
  const [local, host] = parts;
  if (local.length === 0 || local.length > 64 || /[\s\x00-\x1f\x7f"<>()\[\],;:\\]/.test(local)) return null;
  const domain = normalizeDomain(host);
  return domain ? `${local.toLowerCase()}@${domain}` : null;
}

/** The domain part of an email address, lower-cased; null when it is not an address. */
export function emailDomain(email: string): string | null {
  const at = email.lastIndexOf('@');
  if (at <= 0) return null;
  return normalizeDomain(email.slice(at + 1));
}

/** "a.b.acme.com" → ["a.b.acme.com", "b.acme.com", "acme.com"]: the domains that would match it. */
export function candidateDomains(domain: string): string[] {
  const labels = domain.split('.');
  const out: string[] = [];
  for (let i = 0; i < labels.length - 1; i++) out.push(labels.slice(i).join('.'));
  return out;
}

/** Whether `domain` is `parent` or one of its subdomains. */
export function domainMatches(domain: string, parent: string): boolean {
  return domain === parent || domain.endsWith(`.${parent}`);
}

/** The entry whose domain is the most specific match for `domain`, or undefined. */
export function mostSpecific<T extends { domain: string }>(domain: string, entries: T[]): T | undefined {
  let best: T | undefined;
  for (const e of entries) {
    if (domainMatches(domain, e.domain) && (!best || e.domain.length > best.domain.length)) best = e;
  }
  return best;
}
