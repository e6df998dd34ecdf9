-- The control database: owners, projects and everything they configure, SSO state, and the
-- deliveries projection. Secret material is stored only as AES-256-GCM ciphertext (*_enc columns,
-- see src/lib/secret-box.ts); hashes (*_hash) are SHA-256 of random tokens.

create table plans (
  name text primary key,
  features text[] not null default '{}'
);
insert into plans (name, features) values
  ('free', '{}'),
  ('pro', '{custom_smtp}'),
  ('enterprise', '{sso,custom_smtp}');

create table owners (
  id uuid primary key default gen_random_uuid(),
  email text not null unique,
  created_at timestamptz not null default now()
);

create table owner_tokens (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null references owners (id) on delete cascade,
  token_hash bytea not null unique,
  name text not null default 'default',
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);

create table projects (
  ref text primary key check (ref ~ '^[a-z][a-z0-9-]{2,39}$'),
  owner_id uuid not null references owners (id),
  plan text not null references plans (name),
  -- connection string of the project's own database (encrypted: it may carry a password)
  database_url_enc bytea not null,
  managed_database boolean not null default true,
  anon_key text not null unique,
  site_url text not null default 'http://localhost:3000',
  additional_redirect_urls text[] not null default '{}',
  disable_signup boolean not null default false,
  allow_linking boolean not null default false,
  -- per-project signing key for access tokens (ES256); the private JWK is encrypted
  jwt_kid text not null,
  jwt_private_jwk_enc bytea not null,
  jwt_public_jwk jsonb not null,
  outbox_enabled_at timestamptz,
  connector_name text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index on projects (owner_id);

create table audit_log (
  id bigserial primary key,
  project_ref text not null,
  owner_id uuid,
  action text not null,            -- e.g. webhook.create, secret.put
  resource_type text not null,
  resource_id text,
  details jsonb not null default '{}', -- never a secret value
  request_id text,
  created_at timestamptz not null default now()
);
create index on audit_log (project_ref, id desc);

create table secrets (
  project_ref text not null references projects (ref) on delete cascade,
  name text not null check (name ~ '^[A-Za-z_][A-Za-z0-9_]{0,63}$'),
  value_enc bytea not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (project_ref, name)
);

create table smtp_settings (
  project_ref text primary key references projects (ref) on delete cascade,
  host text not null,
  port integer not null,
  username text,
  password_enc bytea,
  sender_email text not null,
  sender_name text,
  tls_mode text not null check (tls_mode in ('starttls', 'implicit', 'none')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table webhooks (
  id uuid primary key default gen_random_uuid(),
  project_ref text not null references projects (ref) on delete cascade,
  name text not null,
  schema_name text not null check (schema_name in ('public', 'api')),
  table_name text not null,
  events text[] not null,
  url text not null,
  headers jsonb not null default '{}',
  timeout_ms integer not null,
  enabled boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index on webhooks (project_ref);

-- Signing secrets of a webhook: the current one has expires_at null; after a rotation the previous
-- one keeps signing beside the new one until expires_at (Standard Webhooks allows several v1 sigs).
create table webhook_signing_secrets (
  id uuid primary key default gen_random_uuid(),
  webhook_id uuid not null references webhooks (id) on delete cascade,
  secret_enc bytea not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz
);
create index on webhook_signing_secrets (webhook_id);

-- ---------------------------------------------------------------------------------------------
-- Deliveries: a projection of the delivery-events topic (rebuildable), plus the dispatcher's
-- ledger that makes redelivered messages idempotent.

create table deliveries (
  id uuid primary key,                 -- the outbox message id = webhook-id
  project_ref text not null,
  kind text not null check (kind in ('webhook', 'http', 'email')),
  webhook_id uuid,
  target text not null,                -- URL as written (placeholders kept) or the recipient
  method text,
  status text not null check (status in ('pending', 'delivered', 'failed', 'dead')),
  run integer not null default 1,      -- attempt sequence; a manual retry starts a new one
  attempts integer not null default 0, -- attempts in the current run
  total_attempts integer not null default 0,
  last_http_status integer,
  last_error text,
  last_response_body text,
  callback_function text,
  callback_status text,                -- null | ok | failed
  callback_error text,
  callback_attempts integer not null default 0,
  message_created_at timestamptz not null,
  next_attempt_at timestamptz,
  delivered_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index deliveries_listing on deliveries (project_ref, created_at desc, id desc);
create index deliveries_status on deliveries (project_ref, status, created_at desc, id desc);

create table delivery_attempts (
  delivery_id uuid not null,
  run integer not null,
  attempt integer not null,
  outcome text not null check (outcome in ('delivered', 'failed', 'dead')),
  http_status integer,
  error text,
  response_body text,
  duration_ms integer,
  started_at timestamptz not null,
  finished_at timestamptz not null,
  primary key (delivery_id, run, attempt)
);

-- Written by the dispatcher before it commits a Kafka offset: one row per recorded attempt, so a
-- message redelivered after a crash is recognised and not sent again.
create table delivery_ledger (
  message_id uuid not null,
  run integer not null,
  attempt integer not null,
  outcome text not null,
  final boolean not null,
  recorded_at timestamptz not null default now(),
  primary key (message_id, run, attempt)
);
create index delivery_ledger_final on delivery_ledger (message_id, run) where final;

-- ---------------------------------------------------------------------------------------------
-- SSO

create table sso_providers (
  id uuid primary key default gen_random_uuid(),
  project_ref text not null references projects (ref) on delete cascade,
  kind text not null check (kind in ('oidc', 'saml')),
  name text not null,
  enabled boolean not null default true,
  -- oidc
  issuer text,
  client_id text,
  client_secret_enc bytea,
  scopes text[],
  -- saml
  metadata_url text,
  metadata_xml text,
  idp_entity_id text,
  idp_sso_url text,
  idp_signing_certs text[],
  attribute_mapping jsonb not null default '{}',
  trust_email boolean not null default false,
  jit boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index on sso_providers (project_ref);

create table sso_domains (
  provider_id uuid not null references sso_providers (id) on delete cascade,
  project_ref text not null,
  domain text not null,
  primary key (provider_id, domain),
  unique (project_ref, domain)
);

create table users (
  id uuid primary key default gen_random_uuid(),
  project_ref text not null references projects (ref) on delete cascade,
  email text,
  email_confirmed_at timestamptz,
  banned_until timestamptz,
  user_metadata jsonb not null default '{}',
  app_metadata jsonb not null default '{}',
  last_sign_in_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email on users (project_ref, lower(email));

create table identities (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references users (id) on delete cascade,
  project_ref text not null,
  provider_id uuid not null references sso_providers (id) on delete cascade,
  provider_kind text not null,
  subject text not null,
  email text,
  identity_data jsonb not null default '{}',
  last_sign_in_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (provider_id, subject)
);

-- One sign-in attempt between /sso and the IdP's answer: short-lived and single-use.
create table sso_flows (
  id uuid primary key default gen_random_uuid(),
  project_ref text not null,
  provider_id uuid not null references sso_providers (id) on delete cascade,
  state_hash bytea unique,              -- oidc: SHA-256 of the state sent to the IdP
  nonce text,
  idp_code_verifier_enc bytea,          -- oidc PKCE towards the IdP
  saml_request_id text,
  relay_state_hash bytea unique,        -- saml
  redirect_to text not null,
  code_challenge text,
  code_challenge_method text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  consumed_at timestamptz
);

create table auth_codes (
  code_hash bytea primary key,
  project_ref text not null,
  user_id uuid not null references users (id) on delete cascade,
  provider_id uuid,
  code_challenge text,
  code_challenge_method text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  consumed_at timestamptz
);

create table sessions (
  id uuid primary key default gen_random_uuid(),
  project_ref text not null,
  user_id uuid not null references users (id) on delete cascade,
  provider_id uuid,
  created_at timestamptz not null default now(),
  refreshed_at timestamptz,
  not_after timestamptz not null,
  revoked_at timestamptz
);

create table refresh_tokens (
  id bigserial primary key,
  session_id uuid not null references sessions (id) on delete cascade,
  token_hash bytea not null unique,
  parent_id bigint,
  revoked boolean not null default false,
  created_at timestamptz not null default now()
);

-- SAML replay protection: a response or assertion id is accepted once while it could be valid.
create table saml_replay (
  provider_id uuid not null,
  message_id text not null,
  expires_at timestamptz not null,
  primary key (provider_id, message_id)
);
