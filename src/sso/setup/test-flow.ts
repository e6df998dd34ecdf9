// The test sign-in of a setup link: a normal SP-initiated sign-in against the link's draft
// provider, in a flow marked with the link's id. The IdP-facing routes (SAML ACS, OIDC callback)
// verify the answer exactly as for a real sign-in (the start is in page-routes.ts), then hand it here instead of to completeSignIn:
// no user is created and no session issued. The outcome (what came back, or which check failed and
// what to change at the IdP) is stored for the setup page, and the browser goes back to it.
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { isUuid } from '../../lib/uuid.js';
import { recordSetupLinkAudit } from '../../projects/index.js';
import type { SignInClaims } from '../sign-in/attribute-mapping.js';
import { domainMatches, emailDomain } from '../sign-in/domain-routing.js';
import { routedDomain } from '../providers/store.js';
import { acsUrl, spMetadataUrl } from '../saml/settings.js';
import { oidcCallbackUrl } from '../oidc/settings.js';
import type { FlowRow, ProviderRow, SsoContext } from '../types.js';
import { explainClaims, withoutNetworkDetailIn, type Explanation, type SetupValues } from './explain.js';
import { linkById, setupPageUrl, type LinkRow } from './links.js';

export type TestOutcome = { ok: true; claims: SignInClaims } | { ok: false; explanation: Explanation };

/** The values the explanations quote back (what the admin should have entered). */
export function setupValues(ctx: Pick<SsoContext, 'cfg'>, ref: string, provider: { id: string; oidc_shared_callback?: boolean }, domains: string[]): SetupValues {
  return { acsUrl: acsUrl(ctx, ref, provider.id), spEntityId: spMetadataUrl(ctx, ref, provider.id), redirectUri: oidcCallbackUrl(ctx, { project_ref: ref, ...provider }), domains };
}

// Attribute values are the IdP's: kept for display, bounded so a huge group list cannot bloat a row.
const MAX_SHOWN = 32_000;

function shown(claims: SignInClaims): Record<string, unknown> {
  const raw = JSON.stringify(claims.raw);
  return {
    subject: claims.subject,
    email: claims.email,
    email_verified: claims.email_verified,
    name: claims.name,
    first_name: claims.first_name,
    last_name: claims.last_name,
    image: claims.image,
    extra: claims.extra,
    attributes: raw.length <= MAX_SHOWN ? claims.raw : { truncated: `${raw.length} characters of attributes; too many to show` },
  };
}

/**
 * What a successful protocol answer still needs, checked as a real sign-in would once the draft is
 * live (sign-in/user-resolution.ts): an email inside the link's domains, and domain routing
 * choosing this provider for it, counting the draft as enabled beside the project's other enabled
 * providers (a more specific domain served by another one is not this provider's to sign in).
 */
async function checkClaims(ctx: SsoContext, link: LinkRow, provider: ProviderRow, claims: SignInClaims): Promise<Explanation | null> {
  const v = setupValues(ctx, link.project_ref, provider, link.domains);
  const domain = claims.email ? emailDomain(claims.email) : null;
  if (!domain) return { ...explainClaims('email_missing', { ...v, emailAttribute: provider.attribute_mapping.email }), detail: 'The answer carried no usable email address.' };
  if (!link.domains.some((d) => domainMatches(domain, d))) {
    return { ...explainClaims('domain', { ...v, domain }), detail: `The email is in ${domain}; this link covers ${link.domains.join(', ')}.` };
  }
  const routed = await routedDomain(ctx.db, link.project_ref, domain, provider.id);
  if (routed && routed.provider_id !== provider.id) {
    return {
      ...explainClaims('domain_other_provider', { ...v, domain, otherProviderDomain: routed.domain }),
      detail: `The email is in ${domain}; sign-in sends ${domain} to the provider of ${routed.domain}, the most specific domain, so a sign-in through this provider would be refused (email_domain_other_provider).`,
    };
  }
  return null;
}

/**
 * Records the outcome of the test flow `flow` and resolves to where the browser goes: the setup
 * page with the result's id. A link that stopped being usable meanwhile records nothing.
 */
export async function finishTest(ctx: SsoContext, log: FastifyBaseLogger, flow: FlowRow, provider: ProviderRow, outcome: TestOutcome): Promise<string> {
  const page = new URL(setupPageUrl(ctx));
  const link = await linkById(ctx.db, flow.project_ref, flow.setup_link_id!);
  if (!link || link.state !== 'active' || link.provider_id !== provider.id) {
    page.searchParams.set('test', 'gone');
    return page.href;
  }
  let result: Record<string, unknown>;
  let ok = outcome.ok;
  if (outcome.ok) {
    const problem = await checkClaims(ctx, link, provider, outcome.claims);
    ok = !problem;
    result = { ok, kind: provider.kind, ...shown(outcome.claims), ...(problem ? { problem } : {}) };
  } else {
    result = { ok: false, kind: provider.kind, problem: outcome.explanation };
  }
  result = forHolder(result);
  const id = randomUUID();
  const check = ok ? null : (result.problem as Explanation).check;
  await ctx.db.query('insert into sso_setup_tests (id, link_id, provider_id, config_version, ok, result) values ($1, $2, $3, $4, $5, $6)', [
    id,
    link.id,
    provider.id,
    provider.updated_at,
    ok,
    result,
  ]);
  // the audit keeps the outcome, never the claims (they are personal data of the admin's user)
  await recordSetupLinkAudit(ctx.db, link.id, null, link.project_ref, {
    action: 'sso_setup_link.test',
    resourceType: 'sso_setup_link',
    resourceId: link.id,
    details: { provider_id: provider.id, kind: provider.kind, ok, ...(check ? { failed_check: check } : {}) },
  });
  log.info({ project: link.project_ref, setup_link: link.id, flow: flow.id, ok, check }, 'sso setup test sign-in finished');
  page.searchParams.set('test', id);
  return page.href;
}

/**
 * A test's result as the link holder may see it: a failure's explanation carries no network detail
 * (explain.ts withoutNetworkDetailIn), whichever path produced it. Applied when a result is stored,
 * and again when one is shown (a row stored before this rule).
 */
export function forHolder(result: Record<string, unknown>): Record<string, unknown> {
  const problem = result.problem as Explanation | undefined;
  return problem && typeof problem.detail === 'string' ? { ...result, problem: withoutNetworkDetailIn(problem) } : result;
}

export interface StoredTest {
  id: string;
  provider_id: string;
  config_version: Date;
  ok: boolean;
  result: Record<string, unknown>;
  created_at: Date;
}

export async function getTest(ctx: Pick<SsoContext, 'db'>, linkId: string, id: string): Promise<StoredTest | null> {
  if (!isUuid(id)) return null;
  const r = await ctx.db.query('select * from sso_setup_tests where link_id = $1 and id = $2', [linkId, id]);
  return r.rows[0] ?? null;
}

export async function latestTest(ctx: Pick<SsoContext, 'db'>, linkId: string): Promise<StoredTest | null> {
  const r = await ctx.db.query('select * from sso_setup_tests where link_id = $1 order by created_at desc limit 1', [linkId]);
  return r.rows[0] ?? null;
}

/** The test ran against the provider's current settings (nothing was saved since). */
export const testIsCurrent = (t: StoredTest | null, p: ProviderRow) => !!t && t.provider_id === p.id && t.config_version.getTime() === p.updated_at.getTime();

/** A passing test of exactly the provider's current settings (a save after the test needs a new one). */
export const testCovers = (t: StoredTest | null, p: ProviderRow) => !!t && t.ok && testIsCurrent(t, p);
