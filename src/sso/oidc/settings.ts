// Small facts about an OIDC provider that both the start and the callback of a sign-in need.
import { aad } from '../../lib/secret-box.js';
import { authBaseUrl } from '../auth-project.js';
import type { ProviderRow, SsoContext } from '../types.js';

export const DEFAULT_SCOPES = ['openid', 'email', 'profile'];

/** The redirect URI to register at the IdP: one per project, the flow is found by its state. */
export const oidcCallbackUrl = (ctx: Pick<SsoContext, 'cfg'>, ref: string) => `${authBaseUrl(ctx, ref)}/sso/oidc/callback`;

export const openClientSecret = (ctx: Pick<SsoContext, 'box'>, provider: Pick<ProviderRow, 'id' | 'client_secret_enc'>) =>
  ctx.box.open(provider.client_secret_enc!, aad.clientSecret(provider.id));

/** The fields discovery and sign-in need, once the provider is known to be OIDC. */
export const oidcSettings = (provider: ProviderRow) => ({ id: provider.id, updated_at: provider.updated_at, issuer: provider.issuer!, client_id: provider.client_id! });
