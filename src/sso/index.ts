// Enterprise SSO: provider management and users for the owner (/v1/projects/{ref}/auth/...), and
// the project's public auth endpoints (/projects/{ref}/auth/v1/..., auth-routes.ts).
//
// A sign-in, stage by stage: POST /sso starts it (auth-routes.ts: domain routing, redirect check,
// PKCE and the flow row in sign-in/); the provider's kind sends the browser to the IdP and takes
// its answer (oidc/: discovery and the callback; saml/: AuthnRequest, metadata and the ACS, with
// the pure protocol core in saml/core/); sign-in/complete.ts maps the claims, resolves the user
// and issues a single-use code; POST /token exchanges it for a session and an access token
// (sessions/). providers/ and users/ are the owner's routes. setup/ is the self-serve set-up by a
// customer's IT admin through a setup link: its page's API and a test sign-in mode of the flows.
import type { FastifyInstance } from 'fastify';
import type { AccessVerifiers } from '../http/index.js';
import type { SsoContext } from './types.js';
import { registerAuthApi } from './auth-routes.js';
import { registerProviderRoutes } from './providers/routes.js';
import { registerSigningKeyRoutes } from './sessions/signing-keys.js';
import { registerUserRoutes } from './users/routes.js';
import { registerSetupLinkOwnerRoutes } from './setup/owner-routes.js';
import { registerSetupPageRoutes, setupLinkVerifier } from './setup/page-routes.js';
import { apiKeyVerifier } from './auth-project.js';

export async function registerSso(app: FastifyInstance, ctx: SsoContext): Promise<void> {
  await registerProviderRoutes(app, ctx);
  await registerUserRoutes(app, ctx);
  await registerSigningKeyRoutes(app, ctx);
  await registerSetupLinkOwnerRoutes(app, ctx);
  // its own scope: its no-store header hook covers the setup page's API only
  await app.register(async (scope) => registerSetupPageRoutes(scope, ctx));
  // its own scope: the public auth API's lenient JSON parser (auth-js posts an empty JSON body to
  // /logout) must not reach the owner's Management API routes, which refuse malformed JSON
  await app.register(async (scope) => registerAuthApi(scope, ctx));
}

/** The checks of the callers this area knows: a project's API key, a setup link's holder (src/http/access.ts). */
export function ssoAccessVerifiers(ctx: SsoContext): AccessVerifiers {
  return { 'api-key': apiKeyVerifier(ctx), 'setup-link': setupLinkVerifier(ctx) };
}

export { completeSignIn, failureRedirect } from './sign-in/complete.js';
export { consumeFlow } from './sign-in/flows.js';
export type { ProviderKind, ProviderRow, FlowRow, SignInClaims, SsoContext } from './types.js';
