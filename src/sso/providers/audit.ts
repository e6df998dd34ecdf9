// What the audit trail keeps of an SSO provider change: the fields sent and the settings an owner
// needs to see who changed sign-in for which domains. Never the client secret (only that it
// changed) and never metadata contents: pasted XML is kept as a SHA-256 digest, and the trusted
// signing certificates as their fingerprints (public, and exactly what a rotation changes).
import type { AuditEvent } from '../../projects/index.js';
import { sha256 } from '../../lib/tokens.js';
import { describeCerts } from '../saml/settings.js';
import type { KindColumns, ProviderInput, ProviderRow } from '../types.js';

const PLAIN = ['name', 'enabled', 'trust_email', 'jit', 'attribute_mapping', 'issuer', 'client_id'] as const;

const fingerprints = (certs: string[]) => describeCerts(certs).map((c) => c.sha256_fingerprint);

/** A query string or fragment could carry an access token, so neither is kept. */
function withoutQuery(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

function settings(input: ProviderInput, columns: KindColumns, domains: string[] | undefined, existing?: ProviderRow): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of PLAIN) if (input[f] !== undefined) out[f] = input[f];
  if (domains) out.domains = domains;
  if (input.scopes !== undefined) out.scopes = columns.scopes;
  if (input.client_secret !== undefined) out.client_secret_changed = true;
  // the SAML kind returns these columns exactly when it (re-)read metadata
  if (columns.idp_signing_certs) {
    out.metadata_source = columns.metadata_url ? 'url' : 'xml';
    if (columns.metadata_url) out.metadata_url = withoutQuery(columns.metadata_url);
    if (columns.metadata_xml) out.metadata_sha256 = sha256(columns.metadata_xml).toString('hex');
    out.idp_entity_id = columns.idp_entity_id;
    out.signing_certificates = fingerprints(columns.idp_signing_certs);
    if (existing) {
      const before = new Set(existing.idp_signing_certs ?? []);
      out.signing_certificates_changed = before.size !== columns.idp_signing_certs.length || columns.idp_signing_certs.some((c) => !before.has(c));
    }
  }
  return out;
}

export function providerCreated(id: string, kind: ProviderRow['kind'], input: ProviderInput, columns: KindColumns, domains: string[]): AuditEvent {
  return { action: 'sso_provider.create', resourceType: 'sso_provider', resourceId: id, details: { kind, ...settings(input, columns, domains) } };
}

export function providerUpdated(existing: ProviderRow, input: ProviderInput, columns: KindColumns, domains: string[] | undefined): AuditEvent {
  return {
    action: input.refresh_metadata ? 'sso_provider.refresh_metadata' : 'sso_provider.update',
    resourceType: 'sso_provider',
    resourceId: existing.id,
    // names only: a client_secret sent shows here as a name and as client_secret_changed
    details: { fields: Object.keys(input), ...settings(input, columns, domains, existing) },
  };
}

export function providerDeleted(p: ProviderRow): AuditEvent {
  return { action: 'sso_provider.delete', resourceType: 'sso_provider', resourceId: p.id, details: { kind: p.kind, name: p.name, domains: p.domains } };
}
