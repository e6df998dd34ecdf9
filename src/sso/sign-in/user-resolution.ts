// Which user an SSO sign-in becomes, in exactly this order (docs/sso.md, "Rules and choices"):
//  1. an identity seen before signs in as its user;
//  2. otherwise the asserted email must lie inside the provider's domains, and domain routing must
//     choose this provider for it: when another enabled provider serves a more specific domain of
//     the email (eu.acme.com under acme.com), only that one may create or link its users;
//  3. an existing user with that email is linked only when the project allows linking AND the IdP
//     asserts the email verified (or the provider has trust_email) AND the local email is verified;
//     otherwise email_exists;
//  4. otherwise a user is created just in time when jit is on and sign-ups are allowed, else
//     signup_disabled;
//  5. a banned user is refused (user_banned) whichever way it was found.
// Runs inside the caller's transaction; throws ApiError with the code the browser will see.
import type pg from 'pg';
import { ApiError } from '../../errors.js';
import type { SignInClaims } from './attribute-mapping.js';
import { canonicalEmail, domainMatches, emailDomain } from './domain-routing.js';
import { routedDomain } from '../providers/store.js';
import type { AuthProject, ProviderRow } from '../types.js';

export const providerLabel = (providerId: string) => `sso:${providerId}`;

interface UserRow {
  id: string;
  email_confirmed_at: Date | null;
  banned_until: Date | null;
  app_metadata: { providers?: string[] };
}

const isBanned = (u: UserRow) => !!u.banned_until && u.banned_until.getTime() > Date.now();

function refuseBanned(u: UserRow): void {
  if (isBanned(u)) throw new ApiError('user_banned');
}

/** user_metadata of a just-in-time user: the mapped profile fields, then `extra` (attribute_mapping). */
export function initialUserMetadata(claims: SignInClaims, provider: Pick<ProviderRow, 'trust_email'>): Record<string, unknown> {
  const profile: Record<string, unknown> = {
    sub: claims.subject,
    email: claims.email,
    email_verified: claims.email_verified || provider.trust_email,
    name: claims.name,
    full_name: claims.name,
    first_name: claims.first_name,
    last_name: claims.last_name,
    picture: claims.image,
    avatar_url: claims.image,
  };
  const defined = Object.fromEntries(Object.entries(profile).filter(([, v]) => v !== null && v !== undefined));
  return { ...defined, ...claims.extra };
}

async function recordIdentity(c: pg.PoolClient, userId: string, provider: ProviderRow, claims: SignInClaims): Promise<void> {
  await c.query(
    `insert into identities (user_id, project_ref, provider_id, provider_kind, subject, email, identity_data, last_sign_in_at)
     values ($1, $2, $3, $4, $5, $6, $7, now())
     on conflict (provider_id, subject) do update
       set email = excluded.email, identity_data = excluded.identity_data, last_sign_in_at = now(), updated_at = now()`,
    [userId, provider.project_ref, provider.id, provider.kind, claims.subject, claims.email, { ...claims.raw, sub: claims.subject, email: claims.email }],
  );
}

async function touchUser(c: pg.PoolClient, user: UserRow, provider: ProviderRow): Promise<void> {
  const label = providerLabel(provider.id);
  const providers = user.app_metadata.providers ?? [];
  const appMetadata = { ...user.app_metadata, provider: user.app_metadata.providers?.[0] ?? label, providers: providers.includes(label) ? providers : [...providers, label] };
  await c.query('update users set last_sign_in_at = now(), app_metadata = $2, updated_at = now() where id = $1', [user.id, appMetadata]);
}

export async function resolveUser(c: pg.PoolClient, project: AuthProject, provider: ProviderRow, asserted: SignInClaims): Promise<string> {
  // one spelling of the IdP's email from here on (kept, linked and put in tokens); not an address: none
  const claims = { ...asserted, email: asserted.email === null ? null : canonicalEmail(asserted.email) };
  const USER = 'u.id, u.email_confirmed_at, u.banned_until, u.app_metadata';
  // 1. known identity
  const known = await c.query(`select ${USER} from identities i join users u on u.id = i.user_id where i.provider_id = $1 and i.subject = $2 for update of u`, [provider.id, claims.subject]);
  if (known.rows[0]) {
    const user = known.rows[0] as UserRow;
    refuseBanned(user);
    await recordIdentity(c, user.id, provider, claims);
    await touchUser(c, user, provider);
    return user.id;
  }

  // 2. the email must be inside the provider's domains
  const domain = claims.email ? emailDomain(claims.email) : null;
  if (!domain) throw new ApiError('email_domain_not_allowed', 'The identity provider returned no usable email address.');
  if (!provider.domains.some((d) => domainMatches(domain, d))) {
    throw new ApiError('email_domain_not_allowed', `The identity provider returned an email in ${domain}, which is not one of this provider's domains.`);
  }
  // the most specific provider wins for assertions as for routing: whoever runs the parent
  // domain's IdP must not create or take over accounts of a subdomain another provider serves
  const routed = await routedDomain(c, project.ref, domain);
  if (routed && routed.provider_id !== provider.id) {
    throw new ApiError('email_domain_other_provider', `The identity provider returned an email in ${domain}, which another SSO provider of this project serves (${routed.domain}); only that provider may sign in its users.`);
  }

  // 3. an existing user with that email: link only under all three conditions
  const existing = await c.query(`select ${USER} from users u where u.project_ref = $1 and lower(u.email) = lower($2) for update`, [project.ref, claims.email]);
  if (existing.rows[0]) {
    const user = existing.rows[0] as UserRow;
    const emailTrusted = claims.email_verified || provider.trust_email;
    if (!project.allow_linking || !emailTrusted || !user.email_confirmed_at) {
      const why = !project.allow_linking ? 'the project does not allow linking' : !emailTrusted ? 'the identity provider did not assert the email as verified' : 'the existing account has not verified its email';
      throw new ApiError('email_exists', `An account with this email already exists and was not linked: ${why}.`);
    }
    refuseBanned(user);
    await recordIdentity(c, user.id, provider, claims);
    await touchUser(c, user, provider);
    return user.id;
  }

  // 4. just-in-time user
  if (!provider.jit) throw new ApiError('signup_disabled', 'This provider does not create new users (jit is off).');
  if (project.disable_signup) throw new ApiError('signup_disabled', 'Sign-ups are disabled for this project.');
  const label = providerLabel(provider.id);
  const created = await c.query(
    `insert into users (project_ref, email, email_confirmed_at, user_metadata, app_metadata, last_sign_in_at)
     values ($1, $2, case when $3 then now() end, $4, $5, now()) returning id`,
    [project.ref, claims.email, claims.email_verified || provider.trust_email, initialUserMetadata(claims, provider), { provider: label, providers: [label] }],
  );
  const userId = created.rows[0].id as string;
  await recordIdentity(c, userId, provider, claims);
  return userId;
}
