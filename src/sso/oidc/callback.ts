// The OIDC redirect URIs: the IdP sends the browser here with code and state (or an error). The
// flow is taken by its state (single use), and only at its own provider's URI (settings.ts says
// why: a code must go back to the IdP that issued it); then openid-client checks the answer: the state, the
// `iss` parameter against the discovered issuer, the code exchange with our PKCE verifier and
// client secret, and the ID token (signature, issuer, audience, expiry, nonce of this flow).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import * as client from 'openid-client';
import { aad } from '../../lib/secret-box.js';
import { sha256 } from '../../lib/tokens.js';
import { ApiError } from '../../errors.js';
import { refParams, uuid } from '../../http/index.js';
import { mapOidcClaims } from '../sign-in/attribute-mapping.js';
import { loadAuthProject } from '../auth-project.js';
import { consumeFlow } from '../sign-in/flows.js';
import { getProvider } from '../providers/store.js';
import { completeSignIn, failureRedirect } from '../sign-in/complete.js';
import type { FlowRow, ProviderRow, SsoContext } from '../types.js';
import { configurationFor } from './discovery.js';
import { oidcCallbackUrl, oidcSettings, openClientSecret } from './settings.js';
import { IdpFetchError } from '../idp-fetch.js';
import { explainIdpRequest, explainOidc, IDP_REQUEST_FAILED } from '../setup/explain.js';
import { finishTest, setupValues } from '../setup/test-flow.js';

// Claims about the token rather than the user; not kept as identity data.
const PROTOCOL_CLAIMS = ['aud', 'exp', 'iat', 'nbf', 'nonce', 'at_hash', 'c_hash', 's_hash', 'auth_time', 'azp', 'sid', 'jti', 'acr', 'amr'];

function describe(err: unknown): string {
  if (err instanceof client.AuthorizationResponseError) {
    return `The identity provider refused the sign-in: ${err.error}${err.error_description ? ` (${err.error_description})` : ''}.`;
  }
  if (err instanceof client.ResponseBodyError) {
    return `The identity provider refused the code exchange: ${err.error}${err.error_description ? ` (${err.error_description})` : ''}.`;
  }
  if (err instanceof client.WWWAuthenticateChallengeError) {
    const p = err.cause[0]?.parameters;
    return `The identity provider refused the code exchange: ${p?.error ?? `HTTP ${err.status}`}${p?.error_description ? ` (${p.error_description})` : ''}.`;
  }
  const e = err as { code?: string; message?: string };
  // openid-client wraps oauth4webapi's error, whose cause names the claim or attribute at fault
  let about: unknown;
  for (let c = err as { cause?: unknown; claim?: unknown; attribute?: unknown } | undefined, i = 0; c && !about && i < 4; c = c.cause as typeof c, i++) {
    about = c.claim ?? c.attribute;
  }
  return `The identity provider's answer did not validate: ${e.message ?? 'unknown error'}${typeof about === 'string' ? ` (${about})` : ''}${e.code ? ` [${e.code}]` : ''}.`;
}

// Failures that are about what the ID token (or the browser's callback parameters) says, not about
// how one of the service's requests went: shown to a setup link's holder as they are.
const TOKEN_CHECK_CODES = new Set(['OAUTH_JWT_CLAIM_COMPARISON_FAILED', 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED', 'OAUTH_KEY_SELECTION_FAILED']);

function isTokenCheck(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, i = 0; e && typeof e === 'object' && i < 5; e = e.cause as typeof e, i++) {
    if (typeof e.code === 'string' && TOKEN_CHECK_CODES.has(e.code)) return true;
    // oauth4webapi's INVALID_RESPONSE is about the ID token when its cause holds the claims or the
    // key, about the callback when it holds the parameters, and about a response's body otherwise
    const cause = e.cause as Record<string, unknown> | undefined;
    if (e.code === 'OAUTH_INVALID_RESPONSE' && cause && typeof cause === 'object' && ('claims' in cause || 'key' in cause || 'parameters' in cause)) return true;
  }
  return false;
}

/**
 * The reason the browser is told: a setup link's holder about a failed test sign-in (docs/sso.md,
 * "Setup links"), or the app in error_description. The issuer is the choice of whoever set the
 * provider up (a link's holder included), and its discovery document names the token, userinfo
 * and JWKS endpoints the service then calls, so a failure of those requests (network error,
 * refused address, timeout, an answer that is not OAuth, a discovery redone here) is one generic
 * sentence: no `fetch failed`, no error code of the network, no address, nothing of what an
 * unexpected answer looked like, and of the IdP's error answer its code only. What the IdP said
 * through the browser, and the checks of the ID token, are told as they are. The log keeps the
 * exact reason (describe).
 */
function publicReason(err: unknown): { reason: string; backChannel: boolean } {
  if (err instanceof client.AuthorizationResponseError) return { reason: describe(err), backChannel: false };
  if (err instanceof client.ResponseBodyError || err instanceof client.WWWAuthenticateChallengeError) {
    const code = idpError(err);
    return { reason: `The identity provider refused the code exchange${code && /^[a-z_]{1,64}$/.test(code) ? `: ${code}` : ''}.`, backChannel: false };
  }
  if (isTokenCheck(err)) return { reason: describe(err), backChannel: false };
  if (err instanceof IdpFetchError) return { reason: err.generic, backChannel: true };
  return { reason: IDP_REQUEST_FAILED, backChannel: true };
}

/** The IdP's own OAuth error code, when it answered with one. */
function idpError(err: unknown): string | undefined {
  if (err instanceof client.AuthorizationResponseError || err instanceof client.ResponseBodyError) return err.error;
  if (err instanceof client.WWWAuthenticateChallengeError) return err.cause[0]?.parameters?.error;
  return undefined;
}

async function verifyAndMap(ctx: SsoContext, flow: FlowRow, provider: ProviderRow, query: string) {
  const config = await configurationFor(ctx, oidcSettings(provider), () => openClientSecret(ctx, provider));
  const currentUrl = new URL(`${oidcCallbackUrl(ctx, provider)}?${query}`);
  const tokens = await client.authorizationCodeGrant(config, currentUrl, {
    pkceCodeVerifier: ctx.box.open(flow.idp_code_verifier_enc!, aad.flowVerifier(flow.id)),
    expectedState: new URL(currentUrl).searchParams.get('state') ?? '',
    expectedNonce: flow.nonce!,
    idTokenExpected: true,
  });
  const idClaims = tokens.claims()!;
  let claims: Record<string, unknown> = { ...idClaims };
  // Many IdPs keep profile claims out of the ID token when an access token is issued (OIDC core
  // 5.4); userinfo then has them. openid-client checks that its `sub` is the ID token's.
  if (config.serverMetadata().userinfo_endpoint && tokens.access_token) {
    const info = await client.fetchUserInfo(config, tokens.access_token, idClaims.sub);
    claims = { ...info, ...idClaims };
  }
  for (const k of PROTOCOL_CLAIMS) delete claims[k];
  return mapOidcClaims(claims, provider.attribute_mapping);
}

export function registerOidcCallback(app: FastifyInstance, ctx: SsoContext): void {
  const schema = {
    tags: ['sso'],
    // The parameters are the IdP's (code, state, iss, error... and vendor extras such as
    // session_state); openid-client validates them, so unknown ones are let through here.
    querystring: { type: 'object', additionalProperties: { type: 'string' }, properties: { state: { type: 'string', maxLength: 512 } } },
  } as const;
  // the sign-in flow's state (single use, hashed), the URI it came back to, and the IdP's signed ID token are the credential
  const config = { access: 'public' } as const;
  app.get<{ Params: { ref: string; provider: string }; Querystring: Record<string, string> }>(
    '/projects/:ref/auth/v1/sso/oidc/callback/:provider',
    {
      config,
      schema: { ...schema, summary: "OIDC redirect URI of one provider (its IdP sends the browser here)", params: { type: 'object', additionalProperties: false, required: ['ref', 'provider'], properties: { ...refParams.properties, provider: uuid } } },
    },
    async (req, reply) => callback(req, reply, req.params.provider.toLowerCase()),
  );
  app.get<{ Params: { ref: string }; Querystring: Record<string, string> }>(
    '/projects/:ref/auth/v1/sso/oidc/callback',
    { config, schema: { ...schema, summary: 'OIDC redirect URI shared by the providers made before 2026-11-29', params: refParams } },
    async (req, reply) => callback(req, reply, null),
  );

  /** `via`: the provider whose URI the browser came back to; null: the project's shared URI. */
  async function callback(req: FastifyRequest<{ Params: { ref: string }; Querystring: Record<string, string> }>, reply: FastifyReply, via: string | null) {
    const project = await loadAuthProject(ctx, req.params.ref);
    if (!project) throw new ApiError('not_found');
    const state = req.query.state;
    const flow = state ? await consumeFlow(ctx, project.ref, 'state_hash', sha256(state)) : null;
    if (!flow) {
      req.log.info('oidc callback without a usable flow (unknown, replayed or missing state)');
      return reply.redirect(failureRedirect(project.site_url, 'flow_state_not_found', 'The sign-in attempt is unknown or was already used; start again.'), 303);
    }
    if (flow.expired) {
      return reply.redirect(failureRedirect(flow.redirect_to, 'flow_state_expired', 'The sign-in attempt expired; start again.'), 303);
    }
    const provider = await getProvider(ctx.db, project.ref, flow.provider_id);
    // a setup link's test sign-in runs against the link's draft, which real sign-ins never reach
    const usable = provider && provider.kind === 'oidc' && (provider.enabled || (!!flow.setup_link_id && provider.draft));
    if (!provider || !usable) {
      return reply.redirect(failureRedirect(flow.redirect_to, 'sso_provider_not_found', 'The identity provider is no longer enabled.'), 303);
    }
    // Only at its own provider's redirect URI: an IdP redirects to the URI registered with it, so a
    // state that arrives at another URI came with another IdP's code (a mix-up, or a lure carrying
    // someone else's state). Its code is never sent anywhere; the flow is used up.
    if (via === null ? !provider.oidc_shared_callback : provider.oidc_shared_callback || via !== provider.id) {
      req.log.warn({ provider: provider.id, flow: flow.id, via: via ?? 'shared' }, "oidc callback refused: it came back to another provider's redirect URI than its flow's (an IdP mix-up, or a lure)");
      return reply.redirect(failureRedirect(flow.redirect_to, 'sso_failed', "The sign-in came back from another identity provider than the one it was started with; start again."), 303);
    }
    let claims;
    try {
      claims = await verifyAndMap(ctx, flow, provider, req.url.slice(req.url.indexOf('?') + 1));
    } catch (err) {
      // the description only: the error's cause may carry the IdP's claims
      const reason = describe(err);
      req.log.info({ provider: provider.id, flow: flow.id, reason }, 'oidc answer refused');
      if (flow.setup_link_id) {
        const told = publicReason(err);
        const values = setupValues(ctx, project.ref, provider, provider.domains);
        const explanation = told.backChannel ? explainIdpRequest(told.reason) : explainOidc(told.reason, idpError(err), values);
        return reply.redirect(await finishTest(ctx, req.log, flow, provider, { ok: false, explanation }), 303);
      }
      // also after a link's activation, its holder must not be able to probe through real sign-ins
      return reply.redirect(failureRedirect(flow.redirect_to, 'sso_failed', publicReason(err).reason), 303);
    }
    if (flow.setup_link_id) return reply.redirect(await finishTest(ctx, req.log, flow, provider, { ok: true, claims }), 303);
    return reply.redirect(await completeSignIn(ctx, flow, provider, claims), 303);
  }
}
