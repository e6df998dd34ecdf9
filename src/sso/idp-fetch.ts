// Every request the service makes to an identity provider (SAML metadata download, OIDC discovery,
// and openid-client's token, userinfo and JWKS requests) goes through the outbound SSRF guard of
// webhook deliveries (src/outbound): the address is vetted at connect time, after DNS, so only
// globally routable addresses are reached unless OUTBOUND_ALLOW_CIDRS admits a private range (the
// one way to reach an IdP on a private network). A setup link lets someone outside the project set
// the metadata URL or the issuer, and the discovery document names the other endpoints, so none of
// them is trusted because "the owner chose it".
//
// Redirects are never followed by the HTTP client: a metadata download follows at most a few by hand,
// checking each hop like the first (scheme, literal address, then the guard when connecting);
// openid-client asks for redirect: 'manual' itself and treats a redirect as an error.
import { fetch as undiciFetch, type Dispatcher, type RequestInit as UndiciRequestInit } from 'undici';
import { checkUrlLiteral, createGuardedAgent, findBlockedTargetError, makeAllowList, type AllowList } from '../outbound/index.js';
import { ApiError, type ErrorCode } from '../errors.js';
import type { SsoContext } from './types.js';

type Cfg = SsoContext['cfg'];

const MAX_REDIRECTS = 3;
const guards = new WeakMap<object, { allow: AllowList; agent: Dispatcher }>();

/** One allow-list and guarded undici agent per configuration, shared by all SSO requests. */
function guardFor(cfg: Cfg): { allow: AllowList; agent: Dispatcher } {
  let g = guards.get(cfg);
  if (!g) {
    const allow = makeAllowList(cfg.OUTBOUND_ALLOW_CIDRS);
    guards.set(cfg, (g = { allow, agent: createGuardedAgent({ allow, keepAliveTimeout: 4_000 }) }));
  }
  return g;
}

/**
 * A failed request to an IdP-chosen address. `message` has the detail (HTTP status, network error,
 * refused address) for the owner, who configures the provider and whose requests can only reach
 * allowed addresses anyway; `generic` is what a setup link's holder is told instead, so the answer
 * cannot be used to map which internal addresses and ports answer.
 */
export class IdpFetchError extends ApiError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly generic: string,
  ) {
    super(code, message);
  }
}

/** The generic form of an IdpFetchError, for answers to a setup link's holder; other errors unchanged. */
export function withoutNetworkDetail(err: unknown): unknown {
  return err instanceof IdpFetchError ? new ApiError(err.code, err.generic) : err;
}

/** Why a request failed, in words for the owner and the log (never a response body). */
export function networkReason(err: unknown): string {
  const blocked = findBlockedTargetError(err);
  if (blocked) return `${blocked.hostname} resolves to a ${blocked.range} address, which the service may not connect to (OUTBOUND_ALLOW_CIDRS)`;
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timed out';
  return e.cause?.code ?? e.cause?.message ?? e.message ?? 'unknown error';
}

/** The fetch openid-client uses (its customFetch): through the guard, never following a redirect. */
export function oidcFetch(cfg: Cfg) {
  const { allow, agent } = guardFor(cfg);
  return (url: string, options: { method?: string; headers?: unknown; body?: unknown; signal?: AbortSignal; redirect?: string }): Promise<Response> => {
    const checked = checkUrlLiteral(url, allow);
    if (!checked.ok) return Promise.reject(new TypeError(`refused: ${checked.reason}`));
    // the caller's headers (a record, or the global Headers class, not undici's own) copied as pairs
    const headers: [string, string][] = [];
    new Headers(options.headers as ConstructorParameters<typeof Headers>[0]).forEach((value, name) => headers.push([name, value]));
    return undiciFetch(url, { ...(options as UndiciRequestInit), headers, redirect: 'manual', dispatcher: agent }) as unknown as Promise<Response>;
  };
}

/**
 * GET `url` through the guard, following up to three redirects by hand; each hop must pass
 * `checkHop` (the caller's scheme rule) and the literal-address check before it is requested.
 * Throws a plain Error with a reason on anything but a final response.
 */
export async function guardedGet(cfg: Cfg, url: string, init: { headers: Record<string, string>; timeoutMs: number; checkHop: (u: URL) => string | null }): Promise<Response> {
  const { allow, agent } = guardFor(cfg);
  const signal = AbortSignal.timeout(init.timeoutMs);
  let current = url;
  for (let hop = 0; ; hop++) {
    const u = new URL(current);
    const wrong = init.checkHop(u);
    if (wrong) throw new Error(hop === 0 ? wrong : `redirected to ${u.href}: ${wrong}`);
    const literal = checkUrlLiteral(u.href, allow);
    if (!literal.ok) throw new Error(`${hop === 0 ? '' : `redirected to ${u.href}: `}${literal.reason}`);
    const res = (await undiciFetch(u.href, { headers: init.headers, signal, redirect: 'manual', dispatcher: agent })) as unknown as Response;
    const location = res.status >= 300 && res.status < 400 ? res.headers.get('location') : null;
    if (!location) return res;
    await res.body?.cancel();
    if (hop >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
    current = new URL(location, u).href;
  }
}
