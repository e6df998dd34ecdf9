// OIDC discovery with openid-client. Runs when a provider is saved (to refuse an unreachable issuer
// or one that names itself differently), on the test endpoint, and (cached) during sign-in.
//
// Discovery, and every later request of the configuration it returns (token, userinfo, JWKS: their
// URLs come from the discovery document), go through the outbound SSRF guard (src/sso/idp-fetch.ts):
// a setup link's holder can set the issuer, so only public addresses are reached unless
// OUTBOUND_ALLOW_CIDRS admits a private range, and redirects are not followed. The issuer must be
// https unless OIDC_ALLOW_HTTP_ISSUER allows http.
import * as client from 'openid-client';
import { ApiError } from '../../errors.js';
import { IdpFetchError, networkReason, oidcFetch } from '../idp-fetch.js';
import type { SsoContext } from '../types.js';

const CACHE_TTL_MS = 5 * 60_000;
const cache = new Map<string, { at: number; config: client.Configuration }>();

export const allowHttpIssuer = (ctx: Pick<SsoContext, 'cfg'>) => ctx.cfg.OIDC_ALLOW_HTTP_ISSUER ?? ctx.cfg.APP_ENV !== 'production';

/** The error codes of openid-client / oauth4webapi sit on the error or on its cause. */
function codesOf(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (typeof e.code === 'string') out.push(e.code);
  }
  return out;
}

function reason(err: unknown): string {
  const e = err as { message?: string; cause?: unknown };
  // a network failure (refused by the guard, unreachable, timed out) is fetch's TypeError
  if (err instanceof TypeError || (err as { name?: string }).name === 'TimeoutError') return networkReason(err);
  const c = e.cause as { code?: string; message?: string } | undefined;
  const cause = c?.code ?? c?.message;
  return `${e.message ?? String(err)}${cause && typeof cause === 'string' ? ` (${cause})` : ''}`;
}

/** What a setup link's holder is told about a failed discovery. */
export const GENERIC_DISCOVERY_FAILURE = 'The issuer could not be discovered: check it is public and serves its OpenID configuration at /.well-known/openid-configuration.';

/** Sends a configuration's requests (token, userinfo, JWKS) through the guard too. */
function guard(ctx: Pick<SsoContext, 'cfg'>, config: client.Configuration): client.Configuration {
  config[client.customFetch] = oidcFetch(ctx.cfg) as never;
  return config;
}

/** Discovers `issuer`; maps failures to oidc_issuer_mismatch or oidc_discovery_failed. */
export async function discover(ctx: Pick<SsoContext, 'cfg'>, issuer: string, clientId: string, clientSecret: string): Promise<client.Configuration> {
  let config: client.Configuration;
  try {
    config = await client.discovery(new URL(issuer), clientId, undefined, client.ClientSecretBasic(clientSecret), {
      execute: allowHttpIssuer(ctx) ? [client.allowInsecureRequests] : [],
      timeout: Math.ceil(ctx.cfg.OIDC_HTTP_TIMEOUT / 1000),
      [client.customFetch]: oidcFetch(ctx.cfg) as never,
    });
  } catch (err) {
    const body = (err as { cause?: { body?: { issuer?: unknown }; attribute?: string } }).cause;
    if (codesOf(err).includes('OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED') && body?.attribute === 'issuer') {
      throw new ApiError('oidc_issuer_mismatch', `The provider at ${issuer} reports its issuer as ${JSON.stringify(body.body?.issuer)}; use that exact value or fix the provider.`);
    }
    throw new IdpFetchError('oidc_discovery_failed', `OIDC discovery failed for ${issuer}: ${reason(err)}.`, GENERIC_DISCOVERY_FAILURE);
  }
  // Client authentication is by client secret (private_key_jwt is not supported: docs/sso.md);
  // Basic is the OIDC default, Post when the provider only supports that.
  const methods = config.serverMetadata().token_endpoint_auth_methods_supported;
  if (methods && !methods.includes('client_secret_basic')) {
    if (!methods.includes('client_secret_post')) {
      throw new ApiError('oidc_discovery_failed', `The provider at ${issuer} supports neither client_secret_basic nor client_secret_post.`);
    }
    config = new client.Configuration(config.serverMetadata(), clientId, clientSecret, client.ClientSecretPost(clientSecret));
    if (allowHttpIssuer(ctx)) client.allowInsecureRequests(config);
  }
  config.timeout = Math.ceil(ctx.cfg.OIDC_HTTP_TIMEOUT / 1000);
  return guard(ctx, config);
}

/** Discovery for sign-in, cached per provider version for a few minutes. */
export async function configurationFor(
  ctx: Pick<SsoContext, 'cfg'>,
  provider: { id: string; updated_at: Date; issuer: string; client_id: string },
  clientSecret: () => string,
): Promise<client.Configuration> {
  const key = `${provider.id}:${provider.updated_at.getTime()}`;
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < CACHE_TTL_MS) return hit.config;
  const config = await discover(ctx, provider.issuer, provider.client_id, clientSecret());
  for (const k of cache.keys()) if (k.startsWith(`${provider.id}:`)) cache.delete(k);
  cache.set(key, { at: Date.now(), config });
  return config;
}
