// attribute_mapping (docs/sso.md, "Rules and choices"): which IdP claim feeds which user field. The
// stored mapping holds only what the owner set; the defaults of the provider's kind fill the rest
// at sign-in, so a later change of defaults reaches existing providers.
import { TEXT } from '../../http/index.js';

export interface AttributeMapping {
  email?: string;
  email_verified?: string;
  name?: string;
  first_name?: string;
  last_name?: string;
  image?: string;
  /** user_metadata key → claim name; copied into a new user's user_metadata */
  extra?: Record<string, string>;
}

/** What a protocol step asserts about the user, after mapping; the input of completeSignIn. */
export interface SignInClaims {
  /** the IdP's stable identifier of the user (OIDC sub, SAML NameID) */
  subject: string;
  email: string | null;
  /** the IdP says the email is verified (OIDC email_verified); trust_email is applied later */
  email_verified: boolean;
  name: string | null;
  first_name: string | null;
  last_name: string | null;
  image: string | null;
  extra: Record<string, unknown>;
  /** the raw claims/attributes, kept as the identity's identity_data */
  raw: Record<string, unknown>;
}

export const attributeMappingSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    email: { type: 'string', minLength: 1, maxLength: 256, pattern: TEXT },
    email_verified: { type: 'string', minLength: 1, maxLength: 256, pattern: TEXT },
    name: { type: 'string', minLength: 1, maxLength: 256, pattern: TEXT },
    first_name: { type: 'string', minLength: 1, maxLength: 256, pattern: TEXT },
    last_name: { type: 'string', minLength: 1, maxLength: 256, pattern: TEXT },
    image: { type: 'string', minLength: 1, maxLength: 256, pattern: TEXT },
    extra: {
      type: 'object',
      maxProperties: 50,
      propertyNames: { pattern: '^[A-Za-z0-9_.:-]{1,64}$' },
      additionalProperties: { type: 'string', minLength: 1, maxLength: 256, pattern: TEXT },
    },
  },
} as const;

// The OIDC defaults are email, email_verified, name and picture; for first and last name the
// standard OIDC claims given_name and family_name are used.
export const OIDC_DEFAULTS: Required<Omit<AttributeMapping, 'extra'>> = {
  email: 'email',
  email_verified: 'email_verified',
  name: 'name',
  first_name: 'given_name',
  last_name: 'family_name',
  image: 'picture',
};

/** Own properties only, so a claim named "constructor" cannot read Object.prototype. */
function claim(claims: Record<string, unknown>, name: string): unknown {
  return Object.hasOwn(claims, name) ? claims[name] : undefined;
}

function text(v: unknown): string | null {
  if (typeof v === 'string') return v.trim() || null;
  if (typeof v === 'number') return String(v);
  return null;
}

/** OIDC claims (ID token merged with userinfo) → SignInClaims. */
export function mapOidcClaims(claims: Record<string, unknown>, mapping: AttributeMapping = {}): SignInClaims {
  const m = { ...OIDC_DEFAULTS, ...mapping };
  const verified = claim(claims, m.email_verified);
  const extra = Object.fromEntries(
    Object.entries(mapping.extra ?? {}).flatMap(([key, name]) => {
      const v = claim(claims, name);
      return v === undefined ? [] : [[key, v]];
    }),
  );
  return {
    subject: String(claims.sub),
    email: text(claim(claims, m.email))?.toLowerCase() ?? null,
    email_verified: verified === true || verified === 'true',
    name: text(claim(claims, m.name)),
    first_name: text(claim(claims, m.first_name)),
    last_name: text(claim(claims, m.last_name)),
    image: text(claim(claims, m.image)),
    extra,
    raw: claims,
  };
}
