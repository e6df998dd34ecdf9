// Every HTTP surface of the service, registered in one place.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from './context.js';
import { registerHealth } from './http/health.js';
import { registerManagement } from './management/routes.js';
import { registerSso } from './sso/index.js';
import { registerDeliveries } from './management/deliveries.js';
import { registerDeliveryRetry } from './management/delivery-retry.js';
import { registerDashboard } from './http/dashboard.js';
import { devMailSinkEnabled } from './email/dev-sink.js';
import { registerDevMail } from './email/dev-mail-routes.js';

export async function registerRoutes(app: FastifyInstance, ctx: AppContext): Promise<void> {
  registerHealth(app, ctx);
  await app.register(async (scope) => registerManagement(scope, ctx));
  await app.register(async (scope) => registerSso(scope, ctx));
  await app.register(async (scope) => registerDeliveries(scope, ctx));
  await app.register(async (scope) => registerDeliveryRetry(scope, ctx));
  await app.register(async (scope) => registerDashboard(scope, ctx));
  if (devMailSinkEnabled(ctx.cfg)) await app.register(async (scope) => registerDevMail(scope, ctx));
}
