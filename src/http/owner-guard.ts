// The one owner check of the Management API (/v1/projects/{ref}/...), run as an onRequest hook so
// it comes before the body is parsed or validated, in this order:
//   1. `Authorization: Bearer <owner token>` is valid, else 401 unauthorized;
//   2. the project exists and is the caller's, else 404 project_not_found: the same answer for
//      both, so refs cannot be probed;
//   3. the plan includes the route's feature (the guard's argument, or the route's config.feature),
//      else 402 feature_not_in_plan.
// Only then is the request parsed and validated, so nothing about a body is ever evaluated for
// someone who may not use the route (a non-owner with a bad body gets 404, never 400).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { ownerTokenFor, PROJECT_REF, type Feature } from '../projects/index.js';

declare module 'fastify' {
  interface FastifyRequest {
    ownerId?: string;
    /** the owner_tokens row used, recorded as the actor in the audit log */
    ownerTokenId?: string;
    /** the caller's project, loaded by the guard for every /v1/projects/:ref/... route */
    project?: ProjectRow;
  }
  interface FastifyContextConfig {
    /** a plan feature the route requires (402 feature_not_in_plan without it) */
    feature?: Feature;
  }
}

export interface ProjectRow {
  ref: string;
  owner_id: string;
  plan: string;
  features: Feature[];
  anon_key: string;
  site_url: string;
  additional_redirect_urls: string[];
  disable_signup: boolean;
  allow_linking: boolean;
  outbox_enabled_at: Date | null;
  created_at: Date;
}

type Ctx = Pick<AppContext, 'db'>;

/** Step 1 alone: sets req.ownerId and req.ownerTokenId, or throws 401. */
async function requireOwner(ctx: Ctx, req: FastifyRequest): Promise<void> {
  const h = req.headers.authorization;
  const m = typeof h === 'string' ? /^Bearer\s+(\S{8,512})$/i.exec(h.trim()) : null;
  if (!m) throw new ApiError('unauthorized');
  const owner = await ownerTokenFor(ctx, m[1]);
  if (!owner) throw new ApiError('unauthorized');
  req.ownerId = owner.ownerId;
  req.ownerTokenId = owner.tokenId;
}

/** The project row the guard loads (also to show a project again after a change), or undefined. */
export async function loadProjectRow(ctx: Ctx, ref: string): Promise<ProjectRow | undefined> {
  const r = await ctx.db.query(
    `select j.ref, j.owner_id, j.plan, p.features, j.anon_key, j.site_url, j.additional_redirect_urls, j.disable_signup,
            j.allow_linking, j.outbox_enabled_at, j.created_at
       from projects j join plans p on p.name = j.plan where j.ref = $1`,
    [ref],
  );
  return r.rows[0] as ProjectRow | undefined;
}

/** Step 2: the caller's project `ref`, or 404 project_not_found. */
async function ownedProject(ctx: Ctx, req: FastifyRequest, ref: string): Promise<ProjectRow> {
  // A ref that cannot exist (or holds a NUL byte Postgres would reject) is simply not found.
  if (typeof ref !== 'string' || !PROJECT_REF.test(ref)) throw new ApiError('project_not_found');
  const row = await loadProjectRow(ctx, ref);
  if (!row || row.owner_id !== req.ownerId) throw new ApiError('project_not_found');
  return row;
}

function requireFeature(project: ProjectRow, feature: Feature): void {
  if (!project.features.includes(feature)) {
    throw new ApiError('feature_not_in_plan', `The ${project.plan} plan does not include ${feature === 'sso' ? 'SSO' : 'custom SMTP'}; upgrade to ${feature === 'sso' ? 'enterprise' : 'pro or enterprise'}.`);
  }
}

/**
 * The guard, as an onRequest hook for a route or a whole scope: sets req.ownerId, req.ownerTokenId
 * and (for routes with a :ref) req.project, and enforces `feature` or the route's config.feature.
 * A route without :ref (GET /v1/projects) only needs the owner.
 */
export function ownerGuard(ctx: Ctx, feature?: Feature) {
  return async function guard(req: FastifyRequest, _reply: FastifyReply): Promise<void> {
    await requireOwner(ctx, req);
    const ref = (req.params as { ref?: unknown } | undefined)?.ref;
    if (ref === undefined) return;
    req.project = await ownedProject(ctx, req, String(ref));
    const needed = feature ?? req.routeOptions.config?.feature;
    if (needed) requireFeature(req.project, needed);
  };
}

/** The project the guard loaded for this request. */
export function guardedProject(req: FastifyRequest): ProjectRow {
  if (!req.project) throw new Error('ownerGuard did not run for this route');
  return req.project;
}
