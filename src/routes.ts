// Every HTTP surface of the service, registered in one place. Each route declares who may call it
// (`config.access`); buildServer refuses a route that does not (src/http/access.ts).
import type { FastifyInstance } from 'fastify';
import type { AppContext } from './context.js';
import { ownerVerifiers, registerHealth, registerDashboard, type ServerOptions } from './http/index.js';
import { registerManagement, registerDeliveries, registerDeliveryRetry, registerOrdering } from './management/index.js';
import { registerSso, ssoAccessVerifiers } from './sso/index.js';
import { devMailSinkEnabled, registerDevMail } from './email/index.js';

/**
 * The check of each kind of caller a route may declare (`config.access`, src/http/access.ts), for
 * buildServer: the owner's from the HTTP layer, the API key's and the setup link's from SSO.
 */
export function accessVerifiers(ctx: AppContext): ServerOptions['access'] {
  return { ...ownerVerifiers(ctx), ...ssoAccessVerifiers(ctx) };
}

export async function registerRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  registerHealth(app, ctx);
  await app.register(async (scope) => registerManagement(scope, ctx));
  await app.register(async (scope) => registerSso(scope, ctx));
  await app.register(async (scope) => registerDeliveries(scope, ctx));
  await app.register(async (scope) => registerDeliveryRetry(scope, ctx));
  await app.register(async (scope) => registerOrdering(scope, ctx));
  await app.register(async (scope) => registerDashboard(scope, ctx));
  if (devMailSinkEnabled(ctx.cfg)) await app.register(async (scope) => registerDevMail(scope, ctx));
}
