// Enterprise SSO: provider management and users for the owner (/v1/projects/{ref}/auth/...), and
// the project's public auth endpoints (/projects/{ref}/auth/v1/...).
import type { FastifyInstance } from 'fastify';
import type { SsoContext } from './types.js';
import { registerAuthApi } from './auth-routes.js';
import { registerProviderRoutes } from './provider-routes.js';
import { registerSigningKeyRoutes } from './signing-keys.js';
import { registerUserRoutes } from './user-routes.js';

export async function registerSso(app: FastifyInstance, ctx: SsoContext): Promise<void> {
  await registerProviderRoutes(app, ctx);
  await registerUserRoutes(app, ctx);
  await registerSigningKeyRoutes(app, ctx);
  // its own scope: the public auth API's lenient JSON parser (auth-js posts an empty JSON body to
  // /logout) must not reach the owner's Management API routes, which refuse malformed JSON
  await app.register(async (scope) => registerAuthApi(scope, ctx));
}

export { completeSignIn, failureRedirect } from './sign-in.js';
export { consumeFlow } from './flows.js';
export type { ProviderKind, ProviderRow, FlowRow, SignInClaims, SsoContext } from './types.js';
