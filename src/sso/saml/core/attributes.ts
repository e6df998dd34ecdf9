// Maps a verified assertion onto the user fields of the provider's attribute_mapping
// (docs/sso-saml.md, "Attribute mapping").
// SAML defaults: email = the "email" attribute, else the NameID; first_name = givenName;
// last_name = surname; name = givenName + surname, else displayName.
import type { VerifiedAssertion } from './verify-response.js';

export interface SamlAttributeMapping {
  email?: string;
  name?: string;
  first_name?: string;
  last_name?: string;
  /** user_metadata key -> attribute Name; one value is copied as a string, several as an array. */
  extra?: Record<string, string>;
}

export interface MappedSamlUser {
  email: string | null;
  name: string | null;
  first_name: string | null;
  last_name: string | null;
  extra: Record<string, unknown>;
}

export function mapSamlAttributes(a: VerifiedAssertion, mapping: SamlAttributeMapping = {}): MappedSamlUser {
  const first = (attrName: string | undefined) => {
    const v = values(a, attrName)[0]?.trim();
    return v ? v : null;
  };
  // The NameID is always an email here (verifySamlResponse enforces the format), so it is a safe
  // fallback when the IdP sends no email attribute.
  const email = first(mapping.email ?? 'email') ?? a.nameId;
  const first_name = first(mapping.first_name ?? 'givenName');
  const last_name = first(mapping.last_name ?? 'surname');
  const composed = [first_name, last_name].filter(Boolean).join(' ');
  const name = (mapping.name !== undefined ? first(mapping.name) : null) ?? (composed || first('displayName'));

  // fromEntries creates own properties, so a key like "__proto__" cannot touch the prototype.
  const extra = Object.fromEntries(
    Object.entries(mapping.extra ?? {}).flatMap(([key, attrName]) => {
      const v = values(a, attrName);
      if (v.length === 0) return [];
      return [[key, v.length === 1 ? v[0] : [...v]]];
    }),
  );
  return { email, name, first_name, last_name, extra };
}

/** Own properties only: a mapping naming "constructor" must not read Object.prototype. */
function values(a: VerifiedAssertion, attrName: string | undefined): string[] {
  return attrName !== undefined && Object.hasOwn(a.attributes, attrName) ? a.attributes[attrName] : [];
}
