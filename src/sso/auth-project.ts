// The project behind a /projects/{ref}/auth/v1 request, and the API key check in front of the
// public auth endpoints. An unknown ref and a wrong key answer alike (401 invalid_api_key), so
// the endpoints cannot be used to probe which projects exist.
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { PROJECT_REF, projectUrl } from '../projects/index.js';
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

declare module 'fastify' {
  interface FastifyRequest {
    /** the project of an 'api-key' route, loaded by its guard (src/http/access.ts) */
    authProject?: AuthProject;
  }
}

/**
 * The guard of every 'api-key' route: the `apikey` header (what supabase-js sends) must be the
 * anon key of the project the route's :ref names. Runs before the body is parsed.
 */
export const apiKeyVerifier =
  (ctx: Pick<SsoContext, 'db'>) =>
  async (req: FastifyRequest): Promise<void> => {
    const key = req.headers.apikey;
    const ref = (req.params as { ref?: unknown } | undefined)?.ref;
    // a ref that cannot exist (or holds a byte Postgres would refuse) is not looked up
    const project = typeof ref === 'string' && PROJECT_REF.test(ref) ? await loadAuthProject(ctx, ref) : null;
    if (!project || typeof key !== 'string' || !safeEqual(key, project.anon_key)) throw new ApiError('invalid_api_key');
    req.authProject = project;
  };

/** The project the 'api-key' guard loaded for this request. */
export function authProjectOf(req: FastifyRequest): AuthProject {
  if (!req.authProject) throw new Error("the 'api-key' guard did not run for this route");
  return req.authProject;
}

export const authBaseUrl = (ctx: Pick<SsoContext, 'cfg'>, ref: string) => `${projectUrl(ctx, ref)}/auth/v1`;
