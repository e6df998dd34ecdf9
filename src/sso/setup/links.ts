// SSO setup links in the control database (migrations/100_sso_setup_links.sql, 101_setup_link_used.sql).
// A link is found by the SHA-256 of its secret, never by the secret itself; its state is computed
// here, in one place (SELECT below): revoked, used, expired, or active.
//
// A link is single-use. `used_at` is stored the moment its provider goes live, whichever way (the
// link's activation, the owner's PATCH {"enabled": true}, any other write that enables the provider
// or makes it a non-draft): a trigger on sso_providers sets it in the same transaction (migration
// 101). Nothing clears it, so deleting the provider later never makes the link usable again. A draft
// the owner deletes before it ever went live leaves the link as it was (nothing went live).
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Pool } from '../../db/index.js';
import { randomToken, sha256 } from '../../lib/tokens.js';
import { isUuid } from '../../lib/uuid.js';
import type { SsoContext } from '../types.js';

type Db = Pool | pg.PoolClient;
export type LinkKind = 'saml' | 'oidc' | 'any';
export type LinkState = 'active' | 'expired' | 'revoked' | 'used';

export interface LinkRow {
  id: string;
  project_ref: string;
  kind: LinkKind;
  domains: string[];
  provider_id: string;
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
  activated_at: Date | null;
  /** when its provider went live (by the link or by the owner); never cleared */
  used_at: Date | null;
  state: LinkState;
}

/** 32 random bytes (256 bits), base64url; the prefix makes a leaked one recognisable to scanners. */
export const newLinkSecret = () => randomToken('ssl_', 32);
const SECRET = /^ssl_[A-Za-z0-9_-]{43}$/;

// The one place a link's state is decided. "used" is what is stored, never what the provider looks
// like now: a provider deleted after it went live leaves its link used.
const SELECT = `select l.id, l.project_ref, l.kind, l.domains, l.provider_id, l.created_at, l.expires_at, l.revoked_at, l.activated_at, l.used_at,
  case when l.revoked_at is not null then 'revoked'
       when l.used_at is not null then 'used'
       when l.expires_at <= now() then 'expired'
       else 'active' end as state
  from sso_setup_links l`;

/** The URL the owner hands out: the secret is in the fragment, which browsers never send, so it stays out of access logs and Referer headers. */
export const setupUrl = (ctx: Pick<SsoContext, 'cfg'>, secret: string) => `${ctx.cfg.publicUrl}/dashboard/sso-setup.html#${secret}`;
/** Where a test sign-in comes back to (the page keeps the secret in sessionStorage meanwhile). */
export const setupPageUrl = (ctx: Pick<SsoContext, 'cfg'>) => `${ctx.cfg.publicUrl}/dashboard/sso-setup.html`;

export async function insertLink(c: Db, ref: string, args: { kind: LinkKind; domains: string[]; ttlMs: number; tokenId: string | null }): Promise<{ id: string; secret: string }> {
  const id = randomUUID();
  const secret = newLinkSecret();
  await c.query(
    `insert into sso_setup_links (id, project_ref, secret_hash, kind, domains, provider_id, created_by_token, expires_at)
     values ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8::double precision / 1000))`,
    [id, ref, sha256(secret), args.kind, args.domains, randomUUID(), args.tokenId, args.ttlMs],
  );
  return { id, secret };
}

export async function linkBySecret(db: Db, secret: string): Promise<LinkRow | null> {
  if (!SECRET.test(secret)) return null;
  const r = await db.query(`${SELECT} where l.secret_hash = $1`, [sha256(secret)]);
  return r.rows[0] ?? null;
}

export async function linkById(db: Db, ref: string, id: string): Promise<LinkRow | null> {
  if (!isUuid(id)) return null;
  const r = await db.query(`${SELECT} where l.project_ref = $1 and l.id = $2`, [ref, id]);
  return r.rows[0] ?? null;
}

/** The live link that reserved `providerId` (for the SP metadata of a provider not saved yet). */
export async function liveLinkForProvider(db: Db, ref: string, providerId: string): Promise<LinkRow | null> {
  if (!isUuid(providerId)) return null;
  const r = await db.query(`select * from (${SELECT} where l.project_ref = $1 and l.provider_id = $2) x where state = 'active'`, [ref, providerId]);
  return r.rows[0] ?? null;
}

/**
 * Locks the link's row until the transaction ends and reads it afresh: a revocation or activation
 * in flight is waited for, and one that comes later waits for this transaction.
 */
export async function lockLink(c: pg.PoolClient, id: string): Promise<LinkRow | null> {
  const r = await c.query(`${SELECT} where l.id = $1 for update of l`, [id]);
  return r.rows[0] ?? null;
}

/**
 * Locks the row of the link that reserved `providerId`, if any, before a write that may make that
 * provider live: the trigger of migration 101 then marks it used without waiting, and the lock
 * order is the link's row before the provider's, as in every write through a link (page-routes.ts
 * stillUsable, the owner's revocation), so the two cannot deadlock.
 */
export async function lockLinkOfProvider(c: pg.PoolClient, providerId: string): Promise<void> {
  if (isUuid(providerId)) await c.query('select 1 from sso_setup_links where provider_id = $1 for update', [providerId]);
}

export async function listLinks(db: Db, ref: string): Promise<LinkRow[]> {
  const r = await db.query(`${SELECT} where l.project_ref = $1 order by l.created_at desc, l.id`, [ref]);
  return r.rows;
}

export async function revokeLink(c: Db, id: string): Promise<boolean> {
  const r = await c.query('update sso_setup_links set revoked_at = now() where id = $1 and revoked_at is null', [id]);
  return (r.rowCount ?? 0) > 0;
}

/**
 * Records that the link itself activated its provider, only if nothing else did first (a second
 * activation finds nothing). `used_at` was already set, by the trigger, when the provider was
 * enabled in the same transaction just before.
 */
export async function markActivated(c: Db, id: string): Promise<boolean> {
  const r = await c.query('update sso_setup_links set activated_at = now() where id = $1 and activated_at is null and revoked_at is null and expires_at > now()', [id]);
  return (r.rowCount ?? 0) > 0;
}

/** The owner's view of a link: never its secret (only its hash is stored anyway). */
export function presentLink(l: LinkRow): Record<string, unknown> {
  return {
    id: l.id,
    kind: l.kind,
    domains: l.domains,
    state: l.state,
    provider_id: l.provider_id,
    created_at: l.created_at,
    expires_at: l.expires_at,
    revoked_at: l.revoked_at,
    activated_at: l.activated_at,
    used_at: l.used_at,
  };
}
