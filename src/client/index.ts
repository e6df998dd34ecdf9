// The project's own small client for SSO sign-in: createClient(projectUrl, anonKey).auth with
// signInWithSSO and exchangeCodeForSession, returning { data, error } like @supabase/auth-js (it
// talks to the same endpoints). No dependencies beyond fetch and Web Crypto.
import { codeChallengeS256, newCodeVerifier } from './pkce.js';
import { memoryStorage, type VerifierStorage } from './storage.js';

export { memoryStorage, type VerifierStorage };

export interface AuthError {
  /** the service's stable error code, e.g. sso_provider_not_found */
  code: string;
  message: string;
  /** HTTP status; 0 when the request did not reach the service */
  status: number;
}

export type Result<T> = { data: T; error: null } | { data: null; error: AuthError };

export interface Identity {
  identity_id: string;
  id: string;
  user_id: string;
  provider: string;
  identity_data: Record<string, unknown>;
  email?: string;
  created_at: string;
  updated_at: string;
  last_sign_in_at?: string;
}

export interface User {
  id: string;
  aud: string;
  role: string;
  email: string;
  email_confirmed_at?: string;
  last_sign_in_at?: string;
  app_metadata: Record<string, unknown>;
  user_metadata: Record<string, unknown>;
  identities: Identity[];
  created_at: string;
  updated_at: string;
}

export interface Session {
  access_token: string;
  token_type: 'bearer';
  expires_in: number;
  expires_at: number;
  refresh_token: string;
  user: User;
}

export type SignInWithSSOOptions = ({ email: string } | { domain: string } | { providerId: string }) & {
  /** where the browser returns with ?code= (must be allowed by the project, else its site URL) */
  redirectTo?: string;
  /** return the IdP URL instead of navigating to it */
  skipBrowserRedirect?: boolean;
};

export interface ClientOptions {
  /** keeps the PKCE verifier across the redirect; memory by default */
  storage?: VerifierStorage;
  fetch?: typeof fetch;
  /** how to send the browser to the IdP; default window.location.assign when there is a window */
  navigate?: (url: string) => void;
}

const VERIFIER_KEY = 'sso-code-verifier';

export function createClient(projectUrl: string, anonKey: string, options: ClientOptions = {}) {
  const base = `${projectUrl.replace(/\/$/, '')}/auth/v1`;
  const storage = options.storage ?? memoryStorage();
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const browser = (globalThis as { location?: { assign(url: string): void } }).location;
  const navigate = options.navigate ?? (browser ? (url: string) => browser.assign(url) : undefined);

  async function call<T>(path: string, body: unknown): Promise<Result<T>> {
    let res: Response;
    try {
      res = await doFetch(`${base}${path}`, { method: 'POST', headers: { apikey: anonKey, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    } catch (e) {
      return { data: null, error: { code: 'network_error', message: (e as Error).message, status: 0 } };
    }
    const parsed = (await res.json().catch(() => null)) as (T & { code?: string; message?: string }) | null;
    if (!res.ok) {
      return { data: null, error: { code: parsed?.code ?? 'unexpected_response', message: parsed?.message ?? `HTTP ${res.status}`, status: res.status } };
    }
    return { data: parsed as T, error: null };
  }

  return {
    auth: {
      /** Starts SSO: navigates to the IdP, or with skipBrowserRedirect returns { url }. */
      async signInWithSSO(opts: SignInWithSSOOptions): Promise<Result<{ url: string }>> {
        const verifier = newCodeVerifier();
        await storage.setItem(VERIFIER_KEY, verifier);
        const selector = 'email' in opts ? { email: opts.email } : 'domain' in opts ? { domain: opts.domain } : { provider_id: opts.providerId };
        const result = await call<{ url: string }>('/sso', {
          ...selector,
          redirect_to: opts.redirectTo,
          skip_http_redirect: true,
          code_challenge: await codeChallengeS256(verifier),
          code_challenge_method: 's256',
        });
        if (result.error) await storage.removeItem(VERIFIER_KEY);
        else if (!opts.skipBrowserRedirect && navigate) navigate(result.data.url);
        return result;
      },

      /** Exchanges the ?code= of the redirect for a session, with the stored PKCE verifier. */
      async exchangeCodeForSession(code: string): Promise<Result<{ session: Session; user: User }>> {
        const verifier = await storage.getItem(VERIFIER_KEY);
        if (!verifier) return { data: null, error: { code: 'pkce_verifier_missing', message: 'No sign-in was started with this storage.', status: 0 } };
        const result = await call<Session>('/token?grant_type=pkce', { auth_code: code, code_verifier: verifier });
        await storage.removeItem(VERIFIER_KEY);
        if (result.error) return result;
        return { data: { session: result.data, user: result.data.user }, error: null };
      },
    },
  };
}
