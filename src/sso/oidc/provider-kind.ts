// OIDC providers: field validation and discovery on save, the test endpoint, the response fields,
// and the start of a sign-in (authorization code flow with state, nonce and PKCE towards the IdP).
import * as client from 'openid-client';
import { ApiError } from '../../errors.js';
import { aad } from '../../lib/secret-box.js';
import { sha256 } from '../../lib/tokens.js';
import type { KindColumns, ProviderInput, ProviderKind, ProviderRow, SsoContext } from '../types.js';
import { registerOidcCallback } from './callback.js';
import { allowHttpIssuer, configurationFor, discover } from './discovery.js';
import { DEFAULT_SCOPES, oidcCallbackUrl, oidcSettings, openClientSecret } from './settings.js';

function checkIssuer(ctx: Pick<SsoContext, 'cfg'>, issuer: string): string {
  let u: URL;
  try {
    u = new URL(issuer);
  } catch {
    throw new ApiError('validation_failed', 'issuer must be an absolute URL.');
  }
  const httpOk = u.protocol === 'http:' && allowHttpIssuer(ctx);
  if (u.protocol !== 'https:' && !httpOk) throw new ApiError('validation_failed', 'issuer must be an https:// URL.');
  if (u.search || u.hash || u.username || u.password) throw new ApiError('validation_failed', 'issuer must not carry a query, fragment or credentials.');
  return issuer;
}

/** "openid" is what makes it OIDC (and yields the ID token), so it is always requested. */
function withOpenid(scopes: string[]): string[] {
  const unique = [...new Set(scopes)];
  return unique.includes('openid') ? unique : ['openid', ...unique];
}

export const oidcKind: ProviderKind = {
  kind: 'oidc',
  fields: ['issuer', 'client_id', 'client_secret', 'scopes'],

  async prepare(ctx, providerId, input: ProviderInput, existing?: ProviderRow): Promise<KindColumns> {
    if (!existing) {
      for (const f of ['issuer', 'client_id', 'client_secret'] as const) {
        if (!input[f]) throw new ApiError('validation_failed', `body.${f} is required for an oidc provider.`);
      }
    }
    const issuer = checkIssuer(ctx, input.issuer ?? existing!.issuer!);
    const clientId = input.client_id ?? existing!.client_id!;
    const secret = input.client_secret ?? openClientSecret(ctx, existing!);
    // Saving runs discovery (docs/sso.md); a PATCH that leaves the issuer alone does not need to
    // reach the IdP.
    if (input.issuer !== undefined || !existing) await discover(ctx, issuer, clientId, secret);
    return {
      issuer,
      client_id: clientId,
      client_secret_enc: input.client_secret !== undefined ? ctx.box.seal(input.client_secret, aad.clientSecret(providerId)) : undefined,
      scopes: input.scopes !== undefined ? withOpenid(input.scopes) : existing ? undefined : DEFAULT_SCOPES,
    };
  },

  async test(ctx, provider) {
    try {
      const config = await discover(ctx, provider.issuer!, provider.client_id!, openClientSecret(ctx, provider));
      const m = config.serverMetadata();
      return {
        ok: true,
        kind: 'oidc',
        issuer: m.issuer,
        authorization_endpoint: m.authorization_endpoint ?? null,
        token_endpoint: m.token_endpoint ?? null,
        userinfo_endpoint: m.userinfo_endpoint ?? null,
        jwks_uri: m.jwks_uri ?? null,
        scopes_supported: m.scopes_supported ?? null,
        problem: null,
      };
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      return { ok: false, kind: 'oidc', issuer: provider.issuer, problem: { code: e.code, message: e.message } };
    }
  },

  present(ctx, provider) {
    return {
      issuer: provider.issuer,
      client_id: provider.client_id,
      scopes: provider.scopes ?? DEFAULT_SCOPES,
      callback_url: oidcCallbackUrl(ctx, provider),
    };
  },

  async start(ctx, { provider, flowId }) {
    let config: client.Configuration;
    try {
      config = await configurationFor(ctx, oidcSettings(provider), () => openClientSecret(ctx, provider));
    } catch (e) {
      ctx.log.warn({ provider: provider.id, err: e }, 'oidc discovery failed at sign-in');
      throw new ApiError('sso_failed', 'The identity provider could not be reached; try again later.');
    }
    const state = client.randomState();
    const nonce = client.randomNonce();
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: oidcCallbackUrl(ctx, provider),
      response_type: 'code',
      scope: (provider.scopes ?? DEFAULT_SCOPES).join(' '),
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    return {
      url: url.href,
      flow: { state_hash: sha256(state), nonce, idp_code_verifier_enc: ctx.box.seal(verifier, aad.flowVerifier(flowId)) },
    };
  },

  registerRoutes(app, ctx) {
    registerOidcCallback(app, ctx);
  },
};
