// SSO providers and their domains in the control database.
import type pg from 'pg';
import type { Pool } from '../../db/index.js';
import { ApiError } from '../../errors.js';
import { isUuid } from '../../lib/uuid.js';
import { candidateDomains, mostSpecific } from '../sign-in/domain-routing.js';
import type { KindColumns, ProviderRow } from '../types.js';
import { endProviderSessions } from '../sessions/provider-sessions.js';

type Db = Pool | pg.PoolClient;

const SELECT = `select p.*, coalesce((select array_agg(d.domain order by d.domain) from sso_domains d where d.provider_id = p.id), '{}') as domains
  from sso_providers p`;

// Ids from URLs are checked (isUuid) before they reach a uuid column, where a malformed one would be a 500.

export async function getProvider(db: Db, ref: string, id: string): Promise<ProviderRow | null> {
  if (!isUuid(id)) return null;
  const r = await db.query(`${SELECT} where p.project_ref = $1 and p.id = $2`, [ref, id]);
  return r.rows[0] ?? null;
}

export async function listProviders(db: Db, ref: string): Promise<ProviderRow[]> {
  const r = await db.query(`${SELECT} where p.project_ref = $1 order by p.created_at, p.id`, [ref]);
  return r.rows;
}

export interface RoutedDomain {
  /** the provider domain that matched (the most specific one) */
  domain: string;
  provider_id: string;
  provider_name: string;
}

/**
 * Domain routing, the one rule for both directions: which provider `domain` (an email's domain) is
 * sent to at sign-in, and so the only provider whose assertions of an email in it are accepted.
 * The most specific domain among the project's enabled providers wins; `asLive` (a setup link's
 * draft under test) is counted as if it were enabled.
 */
export async function routedDomain(db: Db, ref: string, domain: string, asLive?: string): Promise<RoutedDomain | null> {
  const r = await db.query<RoutedDomain>(
    `select d.domain, d.provider_id, p.name as provider_name from sso_domains d join sso_providers p on p.id = d.provider_id
      where d.project_ref = $1 and (p.enabled or p.id = $3::uuid) and d.domain = any($2)`,
    [ref, candidateDomains(domain), asLive && isUuid(asLive) ? asLive : null],
  );
  return mostSpecific(domain, r.rows) ?? null;
}

/** The enabled provider whose domain is the most specific match for `domain`. */
export async function providerForDomain(db: Db, ref: string, domain: string): Promise<ProviderRow | null> {
  const best = await routedDomain(db, ref, domain);
  return best ? getProvider(db, ref, best.provider_id) : null;
}

/** The first of `domains` (in no particular order) that a provider of the project already serves, or null. */
export async function takenDomain(db: Db, ref: string, domains: string[]): Promise<string | null> {
  const r = await db.query<{ domain: string }>('select domain from sso_domains where project_ref = $1 and domain = any($2) limit 1', [ref, domains]);
  return r.rows[0]?.domain ?? null;
}

/** Replaces a provider's domains; a domain held by another provider of the project is a 409. */
export async function setDomains(c: pg.PoolClient, ref: string, providerId: string, domains: string[]): Promise<void> {
  const taken = await c.query('select domain from sso_domains where project_ref = $1 and domain = any($2) and provider_id <> $3', [ref, domains, providerId]);
  if (taken.rowCount) throw new ApiError('sso_domain_taken', `The domain ${taken.rows[0].domain} is already bound to another provider of this project.`);
  await c.query('delete from sso_domains where provider_id = $1', [providerId]);
  try {
    await c.query('insert into sso_domains (provider_id, project_ref, domain) select $1, $2, unnest($3::text[])', [providerId, ref, domains]);
  } catch (e) {
    // a concurrent save took the domain between the check and the insert
    if ((e as { code?: string }).code === '23505') throw new ApiError('sso_domain_taken');
    throw e;
  }
}

const KIND_COLUMNS = ['issuer', 'client_id', 'client_secret_enc', 'scopes', 'metadata_url', 'metadata_xml', 'idp_entity_id', 'idp_sso_url', 'idp_signing_certs'] as const;

export interface CommonColumns {
  name?: string;
  /** false moves an OIDC provider from the project's shared redirect URI to its own (oidc/settings.ts) */
  oidc_shared_callback?: boolean;
  enabled?: boolean;
  /** made through a setup link and not activated yet (docs/sso.md, "Setup links") */
  draft?: boolean;
  attribute_mapping?: unknown;
  trust_email?: boolean;
  jit?: boolean;
}

export async function insertProvider(
  c: pg.PoolClient,
  row: { id: string; project_ref: string; kind: string } & CommonColumns & KindColumns,
): Promise<void> {
  const cols = Object.entries(row).filter(([, v]) => v !== undefined);
  await c.query(
    `insert into sso_providers (${cols.map(([k]) => k).join(', ')}) values (${cols.map((_, i) => `$${i + 1}`).join(', ')})`,
    cols.map(([, v]) => v),
  );
}

export async function updateProvider(c: pg.PoolClient, id: string, changes: CommonColumns & KindColumns): Promise<void> {
  const allowed = new Set<string>(['name', 'enabled', 'draft', 'attribute_mapping', 'trust_email', 'jit', 'oidc_shared_callback', ...KIND_COLUMNS]);
  const cols = Object.entries(changes).filter(([k, v]) => v !== undefined && allowed.has(k));
  await c.query(
    `update sso_providers set ${[...cols.map(([k], i) => `${k} = $${i + 2}`), 'updated_at = now()'].join(', ')} where id = $1`,
    [id, ...cols.map(([, v]) => v)],
  );
}

/**
 * Locks the provider's row until the transaction ends and reads what decides whether it may be
 * written (its kind, whether it is a draft, whether it is live); undefined when there is none.
 */
export async function lockProviderState(c: pg.PoolClient, id: string): Promise<Pick<ProviderRow, 'kind' | 'draft' | 'enabled'> | undefined> {
  const r = await c.query<Pick<ProviderRow, 'kind' | 'draft' | 'enabled'>>('select kind, draft, enabled from sso_providers where id = $1 for update', [id]);
  return r.rows[0];
}

/** The domains the provider serves now (read in the caller's transaction). */
export async function providerDomains(c: pg.PoolClient, id: string): Promise<string[]> {
  return (await c.query<{ domain: string }>('select domain from sso_domains where provider_id = $1', [id])).rows.map((r) => r.domain);
}

/**
 * Puts a draft live, only if its settings are still those of `configVersion` (its updated_at at
 * JavaScript's millisecond precision, as a setup test records it): false when it is no longer a
 * draft of the project or was saved since.
 */
export async function activateDraft(c: pg.PoolClient, ref: string, id: string, configVersion: Date): Promise<boolean> {
  const r = await c.query(
    "update sso_providers set enabled = true, draft = false, updated_at = now() where id = $1 and project_ref = $2 and draft and date_trunc('milliseconds', updated_at) = $3",
    [id, ref, configVersion],
  );
  return (r.rowCount ?? 0) > 0;
}

/**
 * Deletes the provider and ends what it issued (endProviderSessions: its sessions revoked, its
 * unexchanged codes burnt); run it in a transaction. null when there was no such provider (a
 * concurrent delete got there first).
 */
export async function deleteProvider(db: Db, ref: string, id: string): Promise<{ sessions_revoked: number } | null> {
  if (!isUuid(id)) return null;
  const r = await db.query('delete from sso_providers where project_ref = $1 and id = $2', [ref, id]);
  if ((r.rowCount ?? 0) === 0) return null;
  return endProviderSessions(db, ref, id);
}
