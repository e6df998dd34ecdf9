// Ending what an SSO provider issued when it is disabled, deleted or given another IdP
// (sessions.ts, top). Its own module: the provider store calls it, and sessions.ts's imports
// (users, sign-in) lead back to the store.
import type pg from 'pg';

/**
 * Ends what a provider issued (its provider disabled, deleted or given another IdP): its live
 * sessions are revoked (their refresh tokens stop working; /user answers session_not_found) and its
 * codes not yet exchanged are burnt. Run in the transaction of the change. Access tokens already
 * issued stay valid until they expire (ACCESS_TOKEN_TTL), as after any sign-out.
 */
export async function endProviderSessions(c: Pick<pg.PoolClient, 'query'>, ref: string, providerId: string): Promise<{ sessions_revoked: number }> {
  await c.query('update auth_codes set consumed_at = now() where project_ref = $1 and provider_id = $2 and consumed_at is null', [ref, providerId]);
  const r = await c.query('update sessions set revoked_at = now() where project_ref = $1 and provider_id = $2 and revoked_at is null and not_after > now()', [ref, providerId]);
  return { sessions_revoked: r.rowCount ?? 0 };
}
