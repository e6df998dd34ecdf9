// The Management API: /v1/projects/{ref}/... for the project's owner. One guard for every route in
// this scope, in this order, before the body is even parsed: a valid owner token (401), the
// project exists and is the caller's (404 project_not_found, same answer for both, so refs cannot
// be probed), and the plan includes the route's feature (402). Only then is the request parsed and
// validated, so nothing about a body is ever evaluated for someone who may not use the route.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { registerAudit } from './audit.js';
import { ownerAuth, ownedProject, requireFeature, type ProjectRow } from './owner-auth.js';
import { registerProjectSettings } from './project-settings.js';
import { projectUrl, type Feature } from './projects.js';
import { errorResponses, noQuery, owner, refuseBody, timestamp } from './schemas.js';
import { registerSecrets } from './secrets.js';
import { registerSmtp } from './smtp.js';
import { registerWebhooks } from './webhooks.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** the caller's project, loaded by the guard for every /v1/projects/:ref/... route */
    project?: ProjectRow;
  }
  interface FastifyContextConfig {
    /** a plan feature the route requires (402 feature_not_in_plan without it) */
    feature?: Feature;
  }
}

/**
 * The guard as an onRequest hook, for any scope of /v1/projects/:ref/... routes (SSO providers and
 * deliveries can add it to theirs): sets req.ownerId, req.project, and enforces config.feature.
 */
export function ownerGuard(ctx: Pick<AppContext, 'db'>) {
  const requireOwner = ownerAuth(ctx);
  return async function guard(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!req.url.startsWith('/v1/')) return;
    await requireOwner(req, reply);
    const ref = (req.params as { ref?: unknown } | undefined)?.ref;
    if (ref === undefined) return;
    req.project = await ownedProject(ctx, req, String(ref));
    const feature = req.routeOptions.config?.feature;
    if (feature) requireFeature(req.project, feature);
  };
}

export async function registerManagement(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.addHook('onRequest', ownerGuard(ctx));

  app.get(
    '/v1/projects',
    {
      preValidation: refuseBody,
      schema: {
        tags: ['projects'],
        summary: "The owner's projects",
        ...owner,
        querystring: noQuery,
        response: {
          200: { type: 'array', items: { type: 'object', properties: { ref: { type: 'string' }, plan: { type: 'string' }, project_url: { type: 'string' }, created_at: timestamp } } },
          ...errorResponses,
        },
      },
    },
    async (req) => {
      const r = await ctx.db.query('select ref, plan, created_at from projects where owner_id = $1 order by created_at', [req.ownerId]);
      return r.rows.map((p) => ({ ref: p.ref, plan: p.plan, project_url: projectUrl(ctx, p.ref), created_at: new Date(p.created_at).toISOString() }));
    },
  );

  registerProjectSettings(app, ctx);
  registerWebhooks(app, ctx);
  registerSecrets(app, ctx);
  registerSmtp(app, ctx);
  registerAudit(app, ctx);
}
