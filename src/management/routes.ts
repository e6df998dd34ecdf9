// The Management API: /v1/projects/{ref}/... for the project's owner.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { ownerAuth, ownedProject, refParam } from './owner-auth.js';
import { projectUrl } from './projects.js';

export async function registerManagement(app: FastifyInstance, ctx: AppContext): Promise<void> {
  app.addHook('onRequest', async (req, reply) => {
    if (req.url.startsWith('/v1/')) await ownerAuth(ctx)(req, reply);
  });

  app.get('/v1/projects', { schema: { tags: ['projects'], summary: "The owner's projects", security: [{ ownerToken: [] }] } }, async (req) => {
    const r = await ctx.db.query('select ref, plan, created_at from projects where owner_id = $1 order by created_at', [req.ownerId]);
    return r.rows.map((p) => ({ ...p, project_url: projectUrl(ctx, p.ref) }));
  });

  app.get<{ Params: { ref: string } }>(
    '/v1/projects/:ref',
    { schema: { tags: ['projects'], summary: 'One project', params: refParam, security: [{ ownerToken: [] }] } },
    async (req) => {
      const p = await ownedProject(ctx, req, req.params.ref);
      return {
        ref: p.ref,
        plan: p.plan,
        features: p.features,
        anon_key: p.anon_key,
        project_url: projectUrl(ctx, p.ref),
        outbox_enabled: !!p.outbox_enabled_at,
        auth: { site_url: p.site_url, additional_redirect_urls: p.additional_redirect_urls, disable_signup: p.disable_signup, allow_linking: p.allow_linking },
        created_at: p.created_at,
      };
    },
  );
}
