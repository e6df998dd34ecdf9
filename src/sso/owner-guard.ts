// The owner check of the SSO management routes, run in onRequest (before the body is parsed or
// validated) like the rest of the Management API: 401 without a valid owner token, 404 for a
// project that is not the caller's, 402 when the plan lacks the feature; only then 400s.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ownedProject, ownerAuth, requireFeature, type ProjectRow } from '../management/owner-auth.js';
import type { Feature } from '../management/projects.js';
import type { SsoContext } from './types.js';

const projects = new WeakMap<FastifyRequest, ProjectRow>();

export function ownerGuard(ctx: SsoContext, feature?: Feature) {
  const requireOwner = ownerAuth(ctx);
  return async function guard(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    await requireOwner(req, reply);
    const project = await ownedProject(ctx, req, (req.params as { ref?: string }).ref ?? '');
    if (feature) requireFeature(project, feature);
    projects.set(req, project);
  };
}

/** The project the guard loaded for this request. */
export function guardedProject(req: FastifyRequest): ProjectRow {
  const p = projects.get(req);
  if (!p) throw new Error('ownerGuard did not run for this route');
  return p;
}
