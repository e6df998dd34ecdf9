// The end of every SSO sign-in, whatever the protocol: once a kind has verified the IdP's answer
// and mapped it to SignInClaims, completeSignIn resolves the user (user-resolution.ts), records the
// identity, issues a single-use code bound to the flow's PKCE challenge, and returns the address
// the browser goes to: redirect_to?code=... on success, redirect_to?error=&error_description= on
// any refusal. The OIDC callback (oidc/callback.ts) and the SAML ACS (saml/acs.ts) both end here.
import { withTransaction } from '../../db/index.js';
import { ApiError, isApiError, type ErrorCode } from '../../errors.js';
import { randomToken, sha256 } from '../../lib/tokens.js';
import type { SignInClaims } from './attribute-mapping.js';
import { loadAuthProject } from '../auth-project.js';
import { withQuery } from './redirects.js';
import type { FlowRow, ProviderRow, SsoContext } from '../types.js';
import { resolveUser } from './user-resolution.js';

/** Where a refused sign-in sends the browser: the flow's redirect address with the error. */
export function failureRedirect(redirectTo: string, code: ErrorCode | string, description: string): string {
  return withQuery(redirectTo, { error: code, error_description: description });
}

export async function completeSignIn(ctx: SsoContext, flow: FlowRow, provider: ProviderRow, claims: SignInClaims): Promise<string> {
  const log = ctx.log.child({ project: flow.project_ref, provider: provider.id, flow: flow.id });
  try {
    const project = await loadAuthProject(ctx, flow.project_ref);
    if (!project) throw new ApiError('sso_provider_not_found');
    const resolve = () => withTransaction(ctx.db, (c) => resolveUser(c, project, provider, claims));
    let userId: string;
    try {
      userId = await resolve();
    } catch (e) {
      // Two first sign-ins of the same person at once: the loser sees the winner's rows on retry.
      if ((e as { code?: string }).code !== '23505') throw e;
      userId = await resolve();
    }
    const code = randomToken('', 32);
    await ctx.db.query(
      `insert into auth_codes (code_hash, project_ref, user_id, provider_id, code_challenge, code_challenge_method, amr_method, expires_at)
       values ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8::double precision / 1000))`,
      [sha256(code), flow.project_ref, userId, provider.id, flow.code_challenge, flow.code_challenge_method, `sso/${provider.kind}`, ctx.cfg.AUTH_CODE_TTL],
    );
    log.info({ user: userId }, 'sso sign-in succeeded');
    return withQuery(flow.redirect_to, { code });
  } catch (e) {
    if (!isApiError(e)) throw e;
    log.info({ code: e.code, reason: e.message }, 'sso sign-in refused');
    return failureRedirect(flow.redirect_to, e.code, e.message);
  }
}
