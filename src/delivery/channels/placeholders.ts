// {{secret:NAME}} placeholders: found in the request as written, substituted only in memory at
// send time, and scrubbed again from anything we keep about the attempt (error text, response
// body), since a target may echo what it was sent.
const PLACEHOLDER = /\{\{secret:([A-Za-z_][A-Za-z0-9_]{0,63})\}\}/g;

export class UnknownSecretError extends Error {
  constructor(readonly secretName: string) {
    super(`unknown secret ${secretName}`);
    this.name = 'UnknownSecretError';
  }
}

/** Names of every secret referenced in the strings of `values` (JSON values walked deeply). */
export function placeholderNames(...values: unknown[]): string[] {
  const names = new Set<string>();
  const visit = (v: unknown): void => {
    if (typeof v === 'string') {
      for (const m of v.matchAll(PLACEHOLDER)) names.add(m[1]);
    } else if (Array.isArray(v)) {
      v.forEach(visit);
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        visit(k);
        visit(x);
      }
    }
  };
  values.forEach(visit);
  return [...names];
}

export function substitute(text: string, secrets: ReadonlyMap<string, string>): string {
  return text.replace(PLACEHOLDER, (_, name: string) => {
    const value = secrets.get(name);
    if (value === undefined) throw new UnknownSecretError(name);
    return value;
  });
}

/** Substitutes inside every string (keys included) of a JSON value, so escaping stays correct. */
export function substituteJson(value: unknown, secrets: ReadonlyMap<string, string>): unknown {
  if (typeof value === 'string') return substitute(value, secrets);
  if (Array.isArray(value)) return value.map((v) => substituteJson(v, secrets));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [substitute(k, secrets), substituteJson(v, secrets)]));
  }
  return value;
}

/**
 * Replaces every appearance of a used secret value by its placeholder: as written, JSON-escaped
 * (also with `\/`), and in each way a URL carries it (encodeURIComponent, a path's and a query's
 * percent-encoding as the URL serialiser writes them, form encoding with `+`), and, for a secret
 * that is itself a URL, its host (an error names only the host it could not reach). Found by
 * review (2026-11-29): a target echoing the request in another encoding had the secret kept in
 * clear in the attempt's response body. Forms shorter than 3 characters are left alone: scrubbing
 * them would mangle the text while protecting nothing worth the name.
 */
export function scrub(text: string, secrets: ReadonlyMap<string, string>): string {
  let out = text;
  for (const [name, value] of secrets) {
    if (value.length < 3) continue;
    // longest first, so a form that contains another is replaced whole
    const forms = [...secretForms(value)].filter((f) => f.length >= 3).sort((a, b) => b.length - a.length);
    for (const form of forms) out = out.split(form).join(`{{secret:${name}}}`);
  }
  return out;
}

function secretForms(value: string): Set<string> {
  const json = JSON.stringify(value).slice(1, -1);
  const forms = new Set([value, json, json.replace(/\//g, '\\/'), encodeURIComponent(value), new URLSearchParams({ v: value }).toString().slice(2)]);
  try {
    forms.add(new URL(`http://h/${value}`).pathname.slice(1));
    forms.add(new URL(`http://h/?${value}`).search.slice(1));
  } catch {
    // not encodable as a path or a query: the other forms stand
  }
  try {
    const u = new URL(value);
    if (u.hostname.length >= 8) forms.add(u.hostname);
    if (u.host.length >= 8) forms.add(u.host);
  } catch {
    // not a URL
  }
  return forms;
}
