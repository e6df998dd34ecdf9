// Subdomain takeover warnings. Sign-in picks the most specific domain among enabled providers
// (sign-in/domain-routing.ts, store.ts routedDomain), so a provider going live for eu.acme.com while
// another live provider serves acme.com moves the eu.acme.com users to it: from then on only the
// new provider may sign them in. That is allowed (the owner chose the domains) but always said, at
// each moment it can happen: when the owner makes a setup link for such a domain (it would move
// them), and when it does move them: the link's activation, the owner creating an enabled provider,
// enabling one, or adding domains to an enabled one. A provider for a parent of a live domain moves
// nobody (the live, more specific one keeps its users), and a disabled provider routes nobody.
import type pg from 'pg';
import type { Pool } from '../../db/index.js';
import { mostSpecific } from '../sign-in/domain-routing.js';

type Db = Pool | pg.PoolClient;

export interface TakeoverWarning {
  code: 'takes_over_subdomain';
  /** the domain that moves (one of the new provider's) */
  domain: string;
  /** the live provider its users signed in through until then */
  provider_id: string;
  provider_name: string;
  /** that provider's (parent) domain */
  provider_domain: string;
  message: string;
}

/** The JSON schema of a warning, for the answers that carry them. */
export const takeoverWarningSchema = {
  type: 'object',
  properties: {
    code: { type: 'string', enum: ['takes_over_subdomain'] },
    domain: { type: 'string', description: 'the domain whose users move' },
    provider_id: { type: 'string', description: 'the live provider they signed in through' },
    provider_name: { type: 'string' },
    provider_domain: { type: 'string', description: "that provider's (parent) domain" },
    message: { type: 'string' },
  },
} as const;

/**
 * The live providers whose users of `domains` move (or, for a link not activated yet, would move)
 * to the provider `exclude` once it serves them. `moment`: 'link' words it for a link being made,
 * 'now' for a change that takes effect in the caller's transaction.
 */
export async function takeoverWarnings(db: Db, ref: string, domains: string[], opts: { exclude?: string; moment: 'link' | 'now' }): Promise<TakeoverWarning[]> {
  if (domains.length === 0) return [];
  const live = await db.query<{ domain: string; id: string; name: string }>(
    'select d.domain, p.id, p.name from sso_domains d join sso_providers p on p.id = d.provider_id where d.project_ref = $1 and p.enabled and p.id is distinct from $2::uuid order by d.domain',
    [ref, opts.exclude ?? null],
  );
  const out: TakeoverWarning[] = [];
  for (const domain of domains) {
    const parent = mostSpecific(domain, live.rows.filter((r) => r.domain !== domain));
    if (!parent) continue;
    out.push({
      code: 'takes_over_subdomain',
      domain,
      provider_id: parent.id,
      provider_name: parent.name,
      provider_domain: parent.domain,
      message:
        opts.moment === 'link'
          ? `Users of ${domain} now sign in through the live provider "${parent.name}" (${parent.domain}); once this link's provider is activated, they sign in through it instead.`
          : `Users of ${domain} signed in through the provider "${parent.name}" (${parent.domain}) until now; they now sign in through this provider, and "${parent.name}" may no longer sign them in.`,
    });
  }
  return out;
}
