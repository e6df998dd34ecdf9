// Sign-in flows: one row per attempt between POST /sso and the IdP's answer. A flow is found by a
// hash of the handle the IdP echoes back (OIDC state, SAML RelayState), is consumed atomically on
// first use (so a replayed answer finds nothing), and is refused once expired.
import { randomUUID } from 'node:crypto';
import type { FlowColumns, FlowRow, SsoContext } from '../types.js';

export const newFlowId = () => randomUUID();

export async function insertFlow(
  ctx: Pick<SsoContext, 'db' | 'cfg'>,
  flow: { id: string; project_ref: string; provider_id: string; redirect_to: string; code_challenge: string | null; code_challenge_method: string | null; setup_link_id?: string } & FlowColumns,
): Promise<void> {
  const cols = Object.entries(flow).filter(([, v]) => v !== undefined);
  await ctx.db.query(
    `insert into sso_flows (${cols.map(([k]) => k).join(', ')}, expires_at)
     values (${cols.map((_, i) => `$${i + 1}`).join(', ')}, now() + make_interval(secs => $${cols.length + 1}::double precision / 1000))`,
    [...cols.map(([, v]) => v), ctx.cfg.SSO_FLOW_TTL],
  );
}

/**
 * Takes the flow whose `column` hash matches, marking it used. Null when there is none (unknown,
 * other project, already used); `expired` tells the caller to refuse it (flow_state_expired)
 * while still knowing where to send the browser.
 */
export async function consumeFlow(
  ctx: Pick<SsoContext, 'db'>,
  ref: string,
  column: 'state_hash' | 'relay_state_hash',
  hash: Buffer,
): Promise<(FlowRow & { expired: boolean }) | null> {
  const r = await ctx.db.query(
    `update sso_flows set consumed_at = now() where project_ref = $1 and ${column} = $2 and consumed_at is null
     returning *, expires_at <= now() as expired`,
    [ref, hash],
  );
  return r.rows[0] ?? null;
}

let lastCleanup = 0;

/**
 * Flows and sign-in codes are useless an hour past expiry; sign-in starts clear them out as they
 * go, at most once a minute per process (the rows stay harmless if this is late).
 */
export async function deleteExpiredFlows(ctx: Pick<SsoContext, 'db'>): Promise<void> {
  if (Date.now() - lastCleanup < 60_000) return;
  lastCleanup = Date.now();
  await ctx.db.query(`delete from sso_flows where expires_at < now() - interval '1 hour'`);
  await ctx.db.query(`delete from auth_codes where expires_at < now() - interval '1 hour'`);
}
