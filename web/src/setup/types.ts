// What the setup page's API (/v1/sso-setup, src/sso/setup/page-routes.ts) answers.

export interface SamlSide {
  sp_entity_id: string;
  acs_url: string;
  sp_metadata_url: string;
  nameid_format: string;
  attributes: { field: string; attribute: string; note?: string }[];
}

export interface OidcSide {
  redirect_uri: string;
  scopes: string[];
}

export interface Mapping {
  email?: string;
  name?: string;
  first_name?: string;
  last_name?: string;
  extra?: Record<string, string>;
}

export interface Draft {
  id: string;
  kind: 'saml' | 'oidc';
  name: string;
  enabled: boolean;
  draft: boolean;
  domains: string[];
  metadata_url?: string | null;
  metadata_xml?: string | null;
  idp_entity_id?: string | null;
  idp_sso_url?: string | null;
  idp_signing_certificates?: { sha256_fingerprint: string; subject: string; not_after: string }[];
  issuer?: string;
  client_id?: string;
  has_client_secret: boolean;
  attribute_mapping: Mapping;
}

export interface SetupInfo {
  link: { id: string; kind: 'saml' | 'oidc' | 'any'; domains: string[]; expires_at: string };
  project: { ref: string };
  saml: SamlSide | null;
  oidc: OidcSide | null;
  provider: Draft | null;
  last_test: { id: string; ok: boolean; created_at: string; current: boolean } | null;
  can_activate: boolean;
}

export interface Problem {
  check: string;
  title: string;
  fix: string;
  detail: string;
}

export interface TestResult {
  id: string;
  ok: boolean;
  current: boolean;
  kind: 'saml' | 'oidc';
  created_at: string;
  subject?: string;
  email?: string | null;
  email_verified?: boolean;
  name?: string | null;
  first_name?: string | null;
  last_name?: string | null;
  extra?: Record<string, unknown>;
  attributes?: Record<string, unknown>;
  problem?: Problem;
}
