// The project behind a /projects/{ref}/auth/v1 request, and the API key check in front of the
// public auth endpoints. An unknown ref and a wrong key answer alike (401 invalid_api_key), so
// the endpoints cannot be used to probe which projects exist.
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { projectUrl } from '../projects/index.js';
import { safeEqual } from '../lib/tokens.js';
import type { AuthProject, SsoContext } from './types.js';

export async function loadAuthProject(ctx: Pick<SsoContext, 'db'>, ref: string): Promise<AuthProject | null> {
  const r = await ctx.db.query(
    `select j.ref, j.anon_key, j.site_url, j.additional_redirect_urls, j.disable_signup, j.allow_linking, p.features,
            j.jwt_kid, j.jwt_private_jwk_enc, j.jwt_public_jwk, j.jwt_previous_keys
       from projects j join plans p on p.name = j.plan where j.ref = $1`,
    [ref],
  );
  return r.rows[0] ?? null;
}

/** The `apikey` header (what supabase-js sends) must be the project's anon key. */
export async function requireApiKey(ctx: Pick<SsoContext, 'db'>, req: FastifyRequest<{ Params: { ref: string } }>): Promise<AuthProject> {
  const key = req.headers.apikey;
  const project = await loadAuthProject(ctx, req.params.ref);
  if (!project || typeof key !== 'string' || !safeEqual(key, project.anon_key)) throw new ApiError('invalid_api_key');
  return project;
}

export const authBaseUrl = (ctx: Pick<SsoContext, 'cfg'>, ref: string) => `${projectUrl(ctx, ref)}/auth/v1`;
