// Where a sign-in may send the browser back to. Only the project's site_url and its
// additional_redirect_urls are allowed, so a sign-in link cannot be turned into an open redirect
// that hands a code (or an error page) to someone else's site. Anything else falls back to
// site_url (docs/sso.md, "Rules and choices"), rather than failing the sign-in.
//
// Rules, checked against the absolute http(s) URL without credentials:
//  - an exact match of site_url or of an additional URL (compared after URL normalisation);
//  - a URL on site_url's origin whose path lies under site_url's path (site_url
//    "https://app.example.com" allows "https://app.example.com/auth/callback");
//  - an additional URL written as a glob: `*` matches within one host label or path segment
//    (no "." or "/"), `**` matches anything, e.g. "https://*.preview.example.com/**".

export interface RedirectPolicy {
  site_url: string;
  additional_redirect_urls: string[];
}

function parseHttpUrl(value: string): URL | null {
  try {
    const u = new URL(value);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return null;
    if (u.username || u.password) return null;
    return u;
  } catch {
    return null;
  }
}

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i];
    if (ch === '*' && glob[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (ch === '*') {
      re += '[^./]*';
    } else {
      re += ch.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${re}$`);
}

function underSite(target: URL, site: URL): boolean {
  if (target.origin !== site.origin) return false;
  const base = site.pathname.endsWith('/') ? site.pathname : `${site.pathname}/`;
  return target.pathname === site.pathname || target.pathname.startsWith(base);
}

/** Whether `requested` is an allowed redirect address for the project. */
export function isAllowedRedirect(policy: RedirectPolicy, requested: string): boolean {
  const target = parseHttpUrl(requested);
  if (!target) return false;
  const site = parseHttpUrl(policy.site_url);
  if (site && (target.href === site.href || underSite(target, site))) return true;
  return policy.additional_redirect_urls.some((entry) => {
    if (entry.includes('*')) return globToRegExp(entry).test(target.href);
    const allowed = parseHttpUrl(entry);
    return !!allowed && allowed.href === target.href;
  });
}

/** The address to return to: the requested one (normalised) when allowed, else the site URL. */
export function resolveRedirect(policy: RedirectPolicy, requested: string | undefined | null): string {
  return requested && isAllowedRedirect(policy, requested) ? new URL(requested).href : policy.site_url;
}

/** `base` with the given query parameters set (existing ones kept). */
export function withQuery(base: string, params: Record<string, string>): string {
  const u = new URL(base);
  for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
  return u.toString();
}
