// Every HTTP surface of the service, registered in one place.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from './context.js';
import { registerHealth, registerDashboard } from './http/index.js';
import { registerManagement, registerDeliveries, registerDeliveryRetry } from './management/index.js';
import { registerSso } from './sso/index.js';
import { devMailSinkEnabled, registerDevMail } from './email/index.js';

export async function registerRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  registerHealth(app, ctx);
  await app.register(async (scope) => registerManagement(scope, ctx));
  await app.register(async (scope) => registerSso(scope, ctx));
  await app.register(async (scope) => registerDeliveries(scope, ctx));
  await app.register(async (scope) => registerDeliveryRetry(scope, ctx));
  await app.register(async (scope) => registerDashboard(scope, ctx));
  if (devMailSinkEnabled(ctx.cfg)) await app.register(async (scope) => registerDevMail(scope, ctx));
}
