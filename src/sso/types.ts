// The shapes shared by the SSO path: stored providers and flows, the project settings sign-in
// reads, and the interface a provider kind (OIDC in oidc/, SAML in saml/) implements to plug in.
import type { JWK } from 'jose';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import type { AttributeMapping, SignInClaims } from './sign-in/attribute-mapping.js';

export type SsoContext = Pick<AppContext, 'db' | 'box' | 'cfg' | 'log'>;
export type ProviderKindName = 'oidc' | 'saml';

export interface ProviderRow {
  id: string;
  project_ref: string;
  kind: ProviderKindName;
  name: string;
  enabled: boolean;
  /** made through a setup link and not activated yet: disabled, and never routed to */
  draft: boolean;
  issuer: string | null;
  client_id: string | null;
  client_secret_enc: Buffer | null;
  scopes: string[] | null;
  metadata_url: string | null;
  metadata_xml: string | null;
  idp_entity_id: string | null;
  idp_sso_url: string | null;
  idp_signing_certs: string[] | null;
  attribute_mapping: AttributeMapping;
  trust_email: boolean;
  jit: boolean;
  domains: string[];
  /** OIDC made before 2026-11-29: its IdP redirects to the project's one shared callback URI (oidc/settings.ts) */
  oidc_shared_callback: boolean;
  created_at: Date;
  updated_at: Date;
}

/** The columns a kind owns; `prepare` returns the ones to write. */
export type KindColumns = Partial<
  Pick<ProviderRow, 'issuer' | 'client_id' | 'client_secret_enc' | 'scopes' | 'metadata_url' | 'metadata_xml' | 'idp_entity_id' | 'idp_sso_url' | 'idp_signing_certs'>
>;

/** The provider fields of a POST or PATCH body, after schema validation. */
export interface ProviderInput {
  kind?: ProviderKindName;
  name?: string;
  enabled?: boolean;
  domains?: string[];
  issuer?: string;
  client_id?: string;
  client_secret?: string;
  scopes?: string[];
  metadata_url?: string;
  metadata_xml?: string;
  refresh_metadata?: boolean;
  /** PATCH only, OIDC: 'own' moves a provider made before 2026-11-29 to a redirect URI of its own */
  callback?: 'own';
  attribute_mapping?: AttributeMapping;
  trust_email?: boolean;
  jit?: boolean;
}

export interface FlowRow {
  id: string;
  project_ref: string;
  provider_id: string;
  state_hash: Buffer | null;
  nonce: string | null;
  idp_code_verifier_enc: Buffer | null;
  saml_request_id: string | null;
  relay_state_hash: Buffer | null;
  redirect_to: string;
  code_challenge: string | null;
  code_challenge_method: string | null;
  /** set for the test sign-in of a setup link: it ends on the setup page, with no session */
  setup_link_id: string | null;
  created_at: Date;
  expires_at: Date;
  consumed_at: Date | null;
}

/** The protocol-specific columns of a flow, filled by the kind that starts it. */
export type FlowColumns = Partial<Pick<FlowRow, 'state_hash' | 'nonce' | 'idp_code_verifier_enc' | 'saml_request_id' | 'relay_state_hash'>>;

/** A project's settings as the sign-in path needs them. */
export interface AuthProject {
  ref: string;
  anon_key: string;
  site_url: string;
  additional_redirect_urls: string[];
  disable_signup: boolean;
  allow_linking: boolean;
  features: string[];
  jwt_kid: string;
  jwt_private_jwk_enc: Buffer;
  jwt_public_jwk: Record<string, unknown>;
  /** rotated-out public keys (sessions/signing-keys.ts) */
  jwt_previous_keys: PreviousKey[];
}

/** A rotated-out public key, kept while tokens it signed may still be valid. */
export interface PreviousKey {
  jwk: JWK & { kid: string };
  retired_at: string;
  valid_until: string;
}

/**
 * One kind of identity provider. Everything else (CRUD, domain routing, flows, user resolution,
 * codes, sessions) is shared; a kind supplies only validation of its fields and the protocol step:
 * `start` sends the browser to the IdP, and its own routes (OIDC callback, SAML ACS) verify the
 * answer, map it to SignInClaims and call completeSignIn.
 */
export interface ProviderKind {
  kind: ProviderKindName;
  /** body fields only this kind accepts (the others are refused for it) */
  fields: readonly (keyof ProviderInput)[];
  /** Validates this kind's fields and returns the columns to store; may reach the IdP. `existing` is set on PATCH. */
  prepare(ctx: SsoContext, providerId: string, input: ProviderInput, existing?: ProviderRow): Promise<KindColumns>;
  /** Re-checks the IdP without changing anything; the body of POST .../providers/{id}/test. */
  test(ctx: SsoContext, provider: ProviderRow): Promise<Record<string, unknown>>;
  /** The kind's fields of the provider response (never secrets). */
  present(ctx: SsoContext, provider: ProviderRow): Record<string, unknown>;
  /** Starts a sign-in for flow `flowId`: the IdP URL for the browser and the flow columns to keep. */
  start(ctx: SsoContext, args: { project: AuthProject; provider: ProviderRow; flowId: string }): Promise<{ url: string; flow: FlowColumns }>;
  /** The IdP-facing routes (no API key: the browser arrives from the IdP). */
  registerRoutes(app: FastifyInstance, ctx: SsoContext): void;
}

export type { SignInClaims, AttributeMapping };
