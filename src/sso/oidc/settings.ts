// Small facts about an OIDC provider that both the start and the callback of a sign-in need.
import { aad } from '../../lib/secret-box.js';
import { authBaseUrl } from '../auth-project.js';
import type { ProviderRow, SsoContext } from '../types.js';

export const DEFAULT_SCOPES = ['openid', 'email', 'profile'];

/**
 * The redirect URI to register at the IdP: one per provider, so the IdP that issued a code is the
 * one the callback sends it back to. The callback (callback.ts) takes a flow only at its provider's
 * URI: with one URI shared by every provider of a project, the state alone chose the provider, and
 * a code issued by one IdP could be redeemed at another's token endpoint (an IdP mix-up, RFC 9700
 * 4.4; RFC 9207's `iss` would catch it, but many IdPs do not send it). Providers made before
 * 2026-11-29 keep the shared URI their IdP has registered (`oidc_shared_callback`) until moved.
 */
export const oidcCallbackUrl = (ctx: Pick<SsoContext, 'cfg'>, provider: { project_ref: string; id: string; oidc_shared_callback?: boolean }) =>
  provider.oidc_shared_callback ? sharedOidcCallbackUrl(ctx, provider.project_ref) : `${authBaseUrl(ctx, provider.project_ref)}/sso/oidc/callback/${provider.id}`;

/** The project's one callback URI of OIDC providers made before per-provider URIs. */
export const sharedOidcCallbackUrl = (ctx: Pick<SsoContext, 'cfg'>, ref: string) => `${authBaseUrl(ctx, ref)}/sso/oidc/callback`;

export const openClientSecret = (ctx: Pick<SsoContext, 'box'>, provider: Pick<ProviderRow, 'id' | 'client_secret_enc'>) =>
  ctx.box.open(provider.client_secret_enc!, aad.clientSecret(provider.id));

/** The fields discovery and sign-in need, once the provider is known to be OIDC. */
export const oidcSettings = (provider: ProviderRow) => ({ id: provider.id, updated_at: provider.updated_at, issuer: provider.issuer!, client_id: provider.client_id! });
