// The Management API: /v1/projects/{ref}/... for the project's owner. Every route declares
// `config: { access: 'project-owner' }` (GET /v1/projects: 'owner'), and the guard of
// src/http/access.ts decides on the matched route before the body is even parsed: 401 without a
// valid owner token, 404 project_not_found for a project that is not the caller's, 402 when the
// plan lacks the route's config.feature; only then is the request validated (400).
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { registerAudit } from './audit-routes.js';
import { errorResponses, noQuery, owner, refuseBody, timestamp } from '../http/index.js';
import { registerProjectSettings } from './project-settings.js';
import { projectUrl } from '../projects/index.js';
import { registerSecrets } from './secrets.js';
import { registerSmtp } from './smtp.js';
import { registerWebhooks } from './webhooks.js';
import { registerWebhookPreview } from './webhook-preview.js';
import { registerBackfills } from './backfills.js';
import { registerEndpoints } from './endpoints.js';
import { listOwnerProjects } from './project-store.js';

export async function registerManagement(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.get(
    '/v1/projects',
    {
      config: { access: 'owner' },
      preValidation: refuseBody,
      schema: {
        tags: ['projects'],
        summary: "The owner's projects",
        ...owner,
        querystring: noQuery,
        response: {
          200: { type: 'array', items: { type: 'object', required: ['ref', 'plan', 'project_url', 'created_at'], properties: { ref: { type: 'string' }, plan: { type: 'string' }, project_url: { type: 'string' }, created_at: timestamp } } },
          ...errorResponses,
        },
      },
    },
    async (req) => {
      const projects = await listOwnerProjects(ctx.db, req.ownerId!);
      return projects.map((p) => ({ ref: p.ref, plan: p.plan, project_url: projectUrl(ctx, p.ref), created_at: new Date(p.created_at).toISOString() }));
    },
  );

  registerProjectSettings(app, ctx);
  registerWebhooks(app, ctx);
  registerWebhookPreview(app, ctx);
  registerBackfills(app, ctx);
  registerEndpoints(app, ctx);
  registerSecrets(app, ctx);
  registerSmtp(app, ctx);
  registerAudit(app, ctx);
}
