// The Management API as the dashboard sees it: one fetch wrapper that sends the owner token as a
// bearer header (never in a URL) and turns every non-2xx answer into an ApiFailure that carries
// the service's {code, message}.

const TOKEN_KEY = 'integrations.owner_token';

export const session = {
  token: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  signIn: (token: string) => sessionStorage.setItem(TOKEN_KEY, token),
  signOut: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

// The page lives at <base>/dashboard/, the API at <base>/v1/: resolving relatively keeps both
// working when a proxy mounts the service under a path prefix.
const apiBase = new URL('../v1/', location.href);

const listeners = new Set<() => void>();
/** Called when the service refuses the token, so the app can return to the sign-in page. */
export function onUnauthorized(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export async function api<T = unknown>(method: string, path: string, body?: unknown, token = session.token()): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(new URL(path.replace(/^\//, ''), apiBase), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      redirect: 'error',
    });
  } catch {
    throw new ApiFailure(0, 'network_error', 'The service could not be reached. Check your connection and try again.');
  }
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  if (!res.ok) {
    const e = (parsed ?? {}) as { code?: unknown; message?: unknown };
    const failure = new ApiFailure(
      res.status,
      typeof e.code === 'string' ? e.code : `http_${res.status}`,
      typeof e.message === 'string' ? e.message : `The service answered ${res.status} ${res.statusText}.`,
    );
    // Only the kept token expiring signs the page out; a token being tried at sign-in just fails.
    if (res.status === 401 && token && token === session.token()) listeners.forEach((fn) => fn());
    throw failure;
  }
  return parsed as T;
}

/** Path segment for a user-supplied value (secret names, ids). */
export const seg = (v: string) => encodeURIComponent(v);
