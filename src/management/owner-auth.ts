// Owner authentication for the Management API: `Authorization: Bearer <owner token>`.
// Without a valid token: 401 unauthorized. A project that exists but belongs to another owner
// answers 404 project_not_found, exactly like one that does not exist, so refs cannot be probed.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { ownerTokenFor, PROJECT_REF, type Feature } from './projects.js';

declare module 'fastify' {
  interface FastifyRequest {
    ownerId?: string;
    /** the owner_tokens row used, recorded as the actor in the audit log */
    ownerTokenId?: string;
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

export function ownerAuth(ctx: Pick<AppContext, 'db'>) {
  return async function requireOwner(req: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const h = req.headers.authorization;
    const m = typeof h === 'string' ? /^Bearer\s+(\S{8,512})$/i.exec(h.trim()) : null;
    if (!m) throw new ApiError('unauthorized');
    const owner = await ownerTokenFor(ctx, m[1]);
    if (!owner) throw new ApiError('unauthorized');
    req.ownerId = owner.ownerId;
    req.ownerTokenId = owner.tokenId;
  };
}

export async function ownedProject(ctx: Pick<AppContext, 'db'>, req: FastifyRequest, ref: string): Promise<ProjectRow> {
  // A ref that cannot exist (or holds a NUL byte Postgres would reject) is simply not found.
  if (typeof ref !== 'string' || !PROJECT_REF.test(ref)) throw new ApiError('project_not_found');
  const r = await ctx.db.query(
    `select j.ref, j.owner_id, j.plan, p.features, j.anon_key, j.site_url, j.additional_redirect_urls, j.disable_signup,
            j.allow_linking, j.outbox_enabled_at, j.created_at
       from projects j join plans p on p.name = j.plan where j.ref = $1`,
    [ref],
  );
  const row = r.rows[0] as ProjectRow | undefined;
  if (!row || row.owner_id !== req.ownerId) throw new ApiError('project_not_found');
  return row;
}

export function requireFeature(project: ProjectRow, feature: Feature): void {
  if (!project.features.includes(feature)) {
    throw new ApiError('feature_not_in_plan', `The ${project.plan} plan does not include ${feature === 'sso' ? 'SSO' : 'custom SMTP'}; upgrade to ${feature === 'sso' ? 'enterprise' : 'pro or enterprise'}.`);
  }
}

/** Route schema fragment shared by all /v1/projects/{ref}/... routes. */
export const refParam = {
  type: 'object',
  required: ['ref'],
  properties: { ref: { type: 'string', pattern: '^[a-z][a-z0-9-]{2,39}$' } },
} as const;

export const errorSchema = {
  type: 'object',
  required: ['code', 'message'],
  properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
} as const;
