// Sessions: the code exchange that ends a sign-in, refresh-token rotation and sign-out.
//
// - A sign-in code is single-use (consumed atomically before anything else, so a wrong verifier
//   also burns it) and short-lived (AUTH_CODE_TTL); its PKCE challenge must match the verifier.
// - Each refresh returns a new refresh token and revokes the one presented. Presenting a revoked
//   token again means it leaked or was copied: the whole session is revoked (reuse detection).
// - A session lives REFRESH_TOKEN_TTL past its last refresh; access tokens live ACCESS_TOKEN_TTL.
// - What a provider issued ends with it: disabling or deleting it, or putting another IdP behind it,
//   revokes its sessions and burns its unexchanged codes (provider-sessions.ts, in the transaction
//   of that change), and the exchange and the refresh also refuse a provider that is no longer live
//   (a sign-in finishing while the owner disabled its provider). Found by review, 2026-11-29: a
//   deleted provider's sessions went on refreshing, 30 days past each refresh, for ever.
import type pg from 'pg';
import { withTransaction } from '../../db/index.js';
import { ApiError } from '../../errors.js';
import { randomToken, sha256 } from '../../lib/tokens.js';
import { signAccessToken } from './access-tokens.js';
import { normalizeChallengeMethod, verifyCodeVerifier } from '../sign-in/pkce.js';
import type { AuthProject, SsoContext } from '../types.js';
import { loadUser, type UserRecord } from '../users/store.js';
import { presentUser } from '../users/view.js';

const ttlSecs = (ms: number) => ms / 1000;

function refuseBanned(user: UserRecord): void {
  if (user.banned_until && new Date(user.banned_until).getTime() > Date.now()) throw new ApiError('user_banned');
}

async function newRefreshToken(c: pg.PoolClient, sessionId: string, parentId: string | null): Promise<string> {
  const token = randomToken('', 24);
  await c.query('insert into refresh_tokens (session_id, token_hash, parent_id) values ($1, $2, $3)', [sessionId, sha256(token), parentId]);
  return token;
}

async function sessionResponse(
  ctx: Pick<SsoContext, 'box' | 'cfg'>,
  project: AuthProject,
  user: UserRecord,
  session: { id: string; amr_method: string; created_at: Date },
  refreshToken: string,
) {
  const { token, expiresAt, expiresIn } = await signAccessToken(ctx, project, {
    user,
    sessionId: session.id,
    amr: [{ method: session.amr_method, timestamp: Math.floor(new Date(session.created_at).getTime() / 1000) }],
  });
  return { access_token: token, token_type: 'bearer', expires_in: expiresIn, expires_at: expiresAt, refresh_token: refreshToken, user: presentUser(user) };
}

/**
 * SQL: whether the provider of the row aliased `alias` (a code or a session) is still live: enabled,
 * not a draft, of the same project. Null provider_id (none issued so today) counts as live.
 */
const providerLive = (alias: string) =>
  `(${alias}.provider_id is null or exists (select 1 from sso_providers p where p.id = ${alias}.provider_id and p.project_ref = ${alias}.project_ref and p.enabled and not p.draft))`;

/** grant_type=pkce: auth_code + code_verifier → a new session. */
export async function exchangeCode(ctx: SsoContext, project: AuthProject, authCode: string, verifier: string) {
  const r = await ctx.db.query(
    `update auth_codes a set consumed_at = now() where code_hash = $1 and project_ref = $2 and consumed_at is null
     returning user_id, provider_id, code_challenge, code_challenge_method, amr_method, expires_at <= now() as expired,
               ${providerLive('a')} as provider_live`,
    [sha256(authCode), project.ref],
  );
  const code = r.rows[0];
  if (!code) throw new ApiError('flow_state_not_found', 'The sign-in code is invalid, already used or unknown.');
  if (code.expired) throw new ApiError('flow_state_expired', 'The sign-in code expired; sign in again.');
  if (!code.provider_live) throw new ApiError('flow_state_not_found', 'The sign-in code was issued by an SSO provider that has since been disabled or removed; sign in again.');
  const method = normalizeChallengeMethod(code.code_challenge_method);
  if (!code.code_challenge || !method || !verifyCodeVerifier(verifier, code.code_challenge, method)) throw new ApiError('bad_code_verifier');
  return withTransaction(ctx.db, async (c) => {
    const user = await loadUser(c, project.ref, code.user_id);
    if (!user) throw new ApiError('user_not_found');
    refuseBanned(user);
    const s = await c.query(
      `insert into sessions (project_ref, user_id, provider_id, amr_method, not_after)
       values ($1, $2, $3, $4, now() + make_interval(secs => $5)) returning id, amr_method, created_at`,
      [project.ref, user.id, code.provider_id, code.amr_method, ttlSecs(ctx.cfg.REFRESH_TOKEN_TTL)],
    );
    const refresh = await newRefreshToken(c, s.rows[0].id, null);
    return sessionResponse(ctx, project, user, s.rows[0], refresh);
  });
}

/** grant_type=refresh_token: rotates the token; a reused one revokes its session. */
export async function refreshSession(ctx: SsoContext, project: AuthProject, refreshToken: string) {
  const outcome = await withTransaction(ctx.db, async (c) => {
    const r = await c.query(
      `select t.id, t.revoked, s.id as session_id, s.user_id, s.amr_method, s.created_at, s.revoked_at,
              s.not_after <= now() or not ${providerLive('s')} as ended
         from refresh_tokens t join sessions s on s.id = t.session_id
        where t.token_hash = $1 and s.project_ref = $2 for update of t, s`,
      [sha256(refreshToken), project.ref],
    );
    const row = r.rows[0];
    if (!row) return { error: new ApiError('refresh_token_not_found') };
    if (row.revoked_at || row.ended) return { error: new ApiError('refresh_token_not_found', 'Invalid refresh token: the session has ended.') };
    if (row.revoked) {
      await c.query('update sessions set revoked_at = now() where id = $1', [row.session_id]);
      await c.query('update refresh_tokens set revoked = true where session_id = $1', [row.session_id]);
      return { error: new ApiError('refresh_token_already_used', 'Invalid refresh token: already used. The session has been revoked.'), reuse: true, session: row.session_id };
    }
    const user = await loadUser(c, project.ref, row.user_id);
    if (!user) return { error: new ApiError('refresh_token_not_found') };
    refuseBanned(user);
    await c.query('update refresh_tokens set revoked = true where id = $1', [row.id]);
    await c.query(
      'update sessions set refreshed_at = now(), not_after = now() + make_interval(secs => $2) where id = $1',
      [row.session_id, ttlSecs(ctx.cfg.REFRESH_TOKEN_TTL)],
    );
    const next = await newRefreshToken(c, row.session_id, row.id);
    return { response: await sessionResponse(ctx, project, user, { id: row.session_id, amr_method: row.amr_method, created_at: row.created_at }, next) };
  });
  // The revocation must be committed, so the error is thrown after the transaction.
  if (outcome.error) {
    if (outcome.reuse) ctx.log.warn({ project: project.ref, session: outcome.session }, 'refresh token reused: session revoked');
    throw outcome.error;
  }
  return outcome.response!;
}

/** The live session of an access token; session_not_found once it is revoked or over. */
export async function requireLiveSession(ctx: Pick<SsoContext, 'db'>, project: AuthProject, sessionId: string, userId: string): Promise<void> {
  const r = await ctx.db.query(
    'select 1 from sessions where id = $1 and project_ref = $2 and user_id = $3 and revoked_at is null and not_after > now()',
    [sessionId, project.ref, userId],
  );
  if (!r.rowCount) throw new ApiError('session_not_found');
}

/** POST /logout?scope=global|local|others (auth-js's scopes). */
export async function signOut(ctx: Pick<SsoContext, 'db'>, project: AuthProject, sessionId: string, userId: string, scope: 'global' | 'local' | 'others') {
  const where = scope === 'local' ? 'id = $3' : scope === 'others' ? 'id <> $3' : '$3::uuid is not null';
  await ctx.db.query(
    `update sessions set revoked_at = now() where project_ref = $1 and user_id = $2 and revoked_at is null and ${where}`,
    [project.ref, userId, sessionId],
  );
}
