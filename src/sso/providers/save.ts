// Creating and changing a provider: the one code path behind the owner's Management API
// (providers/routes.ts) and the SSO setup links (setup/), so a provider set up by a customer's IT
// admin is validated exactly like one made by the owner. The caller says who made the change by
// the audit writer it passes (the owner's token, or the setup link).
import type pg from 'pg';
import { withTransaction } from '../../db/index.js';
import { ApiError } from '../../errors.js';
import type { AuditEvent } from '../../projects/index.js';
import { normalizeDomain } from '../sign-in/domain-routing.js';
import { providerCreated, providerUpdated } from './audit.js';
import { kindOf } from './kinds.js';
import { lockLinkOfProvider } from '../setup/links.js';
import { getProvider, insertProvider, lockProviderState, providerDomains, setDomains, updateProvider } from './store.js';
import { takeoverWarnings, type TakeoverWarning } from './takeover.js';
import { endProviderSessions } from '../sessions/provider-sessions.js';
import type { ProviderInput, ProviderRow, SsoContext } from '../types.js';

/** Writes the audit entry of a change, in the change's transaction. */
export type AuditWriter = (c: pg.PoolClient, e: AuditEvent) => Promise<void>;

/**
 * Runs first in the write's transaction, after the slow part (discovery, metadata download): a
 * setup link locks its row there and checks it is still usable, so a revocation or activation
 * that happened meanwhile wins. Throwing rolls the write back.
 */
export type WriteGuard = (c: pg.PoolClient) => Promise<void>;

const KIND_SPECIFIC: (keyof ProviderInput)[] = ['issuer', 'client_id', 'client_secret', 'scopes', 'metadata_url', 'metadata_xml', 'refresh_metadata'];

export function checkKindFields(kind: ProviderRow['kind'], body: ProviderInput): void {
  const own = new Set<string>(kindOf(kind).fields);
  const foreign = KIND_SPECIFIC.find((f) => body[f] !== undefined && !own.has(f));
  if (foreign) throw new ApiError('validation_failed', `body.${foreign} does not apply to ${kind} providers.`);
}

export function normalizeDomains(domains: string[]): string[] {
  const out = domains.map((d, i) => {
    const n = normalizeDomain(d);
    if (!n) throw new ApiError('validation_failed', `body.domains.${i} is not a valid domain name: ${JSON.stringify(d)}.`);
    return n;
  });
  return [...new Set(out)];
}

export async function mustGet(ctx: SsoContext, ref: string, id: string): Promise<ProviderRow> {
  const p = await getProvider(ctx.db, ref, id);
  if (!p) throw new ApiError('sso_provider_not_found', 'No such SSO provider.');
  return p;
}

export type CreateInput = ProviderInput & { kind: ProviderRow['kind']; name: string; domains: string[] };

/** A saved provider, and the users of other live providers that moved to it by this write. */
export interface Saved {
  provider: ProviderRow;
  warnings: TakeoverWarning[];
}

/** The audit entry of a write that moved users from other providers names those providers. */
const withTakeover = (e: AuditEvent, warnings: TakeoverWarning[]): AuditEvent =>
  warnings.length ? { ...e, details: { ...e.details, takes_over_from: warnings.map((w) => ({ domain: w.domain, provider_id: w.provider_id })) } } : e;

/**
 * Validates (the kind may reach the IdP: discovery, metadata download) and inserts a provider with
 * its domains and audit entry in one transaction. A draft is stored disabled and marked as such.
 */
export async function createProvider(ctx: SsoContext, ref: string, id: string, b: CreateInput, audit: AuditWriter, opts: { draft?: boolean; guard?: WriteGuard } = {}): Promise<Saved> {
  const kind = kindOf(b.kind);
  checkKindFields(b.kind, b);
  if (b.refresh_metadata !== undefined) throw new ApiError('validation_failed', 'refresh_metadata is a PATCH option.');
  const domains = normalizeDomains(b.domains);
  const columns = await kind.prepare(ctx, id, b);
  let warnings: TakeoverWarning[] = [];
  await withTransaction(ctx.db, async (c) => {
    await opts.guard?.(c);
    await insertProvider(c, {
      id,
      project_ref: ref,
      kind: b.kind,
      name: b.name,
      enabled: opts.draft ? false : b.enabled,
      draft: opts.draft ? true : undefined,
      attribute_mapping: b.attribute_mapping,
      trust_email: b.trust_email,
      jit: b.jit,
      oidc_shared_callback: b.callback === 'own' ? false : undefined,
      ...columns,
    });
    await setDomains(c, ref, id, domains);
    // an enabled provider serves its domains at once: users of a subdomain may move to it
    const live = !opts.draft && b.enabled !== false;
    warnings = live ? await takeoverWarnings(c, ref, domains, { exclude: id, moment: 'now' }) : [];
    await audit(c, withTakeover(providerCreated(id, b.kind, b, columns, domains), warnings));
  });
  return { provider: await mustGet(ctx, ref, id), warnings };
}

/**
 * Validates and applies a change; `enabled: true` on a draft makes it a live provider, which uses
 * up the setup link that made it (migration 101's trigger marks the link, in this transaction).
 */
export async function changeProvider(ctx: SsoContext, ref: string, existing: ProviderRow, b: ProviderInput, audit: AuditWriter, opts: { guard?: WriteGuard } = {}): Promise<Saved> {
  checkKindFields(existing.kind, b);
  if (b.callback !== undefined && existing.kind !== 'oidc') throw new ApiError('validation_failed', 'body.callback applies to OIDC providers only (a SAML provider has its own ACS URL).');
  const domains = b.domains !== undefined ? normalizeDomains(b.domains) : undefined;
  const columns = await kindOf(existing.kind).prepare(ctx, existing.id, b, existing);
  let warnings: TakeoverWarning[] = [];
  await withTransaction(ctx.db, async (c) => {
    await opts.guard?.(c);
    // the link's row before the provider's, like every write through a link (no deadlock with one)
    if (b.enabled === true) await lockLinkOfProvider(c, existing.id);
    // what it served before this write, read under the row's lock (not the caller's earlier read)
    const was = await lockProviderState(c, existing.id);
    const before = await providerDomains(c, existing.id);
    await updateProvider(c, existing.id, {
      name: b.name,
      enabled: b.enabled,
      draft: b.enabled === true && existing.draft ? false : undefined,
      attribute_mapping: b.attribute_mapping,
      trust_email: b.trust_email,
      jit: b.jit,
      oidc_shared_callback: b.callback === 'own' ? false : undefined,
      ...columns,
    });
    if (domains) await setDomains(c, ref, existing.id, domains);
    // Another IdP behind the provider: a subject is unique only within its issuer (OIDC's sub, a
    // SAML NameID), so the identities the old one vouched for are let go. The users stay; the new
    // IdP's people are found again by the linking rules (sign-in/user-resolution.ts), never by a
    // subject that happens to repeat one of the old IdP's (found by review, 2026-11-29: the new
    // IdP's sub 1001 signed in as the old IdP's sub 1001, another person).
    const newIdp = (columns.issuer !== undefined && columns.issuer !== existing.issuer) || (columns.idp_entity_id !== undefined && columns.idp_entity_id !== existing.idp_entity_id);
    const released = newIdp ? ((await c.query('delete from identities where provider_id = $1', [existing.id])).rowCount ?? 0) : 0;
    // what it issued ends with it: switched off, or another IdP behind it (the old IdP's people
    // must not stay signed in through a provider that no longer trusts it)
    const ended = (was?.enabled && b.enabled === false) || newIdp ? await endProviderSessions(c, ref, existing.id) : null;
    // the domains this write puts live: all of them when it enables the provider, else those added
    // to an enabled one; users of a subdomain another live provider served move to it
    if (was && (b.enabled ?? was.enabled)) {
      const after = domains ?? before;
      const moved = was.enabled ? after.filter((d) => !before.includes(d)) : after;
      warnings = await takeoverWarnings(c, ref, moved, { exclude: existing.id, moment: 'now' });
    }
    const event = withTakeover(providerUpdated(existing, b, columns, domains), warnings);
    await audit(c, newIdp || ended ? { ...event, details: { ...event.details, ...(newIdp && { identities_released: released }), ...ended } } : event);
  });
  return { provider: await mustGet(ctx, ref, existing.id), warnings };
}
