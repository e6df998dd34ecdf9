-- Self-serve SSO set-up (docs/sso.md, "Setup links"): the project owner hands the customer's IT
-- admin a link; the admin enters the IdP side, runs a test sign-in and activates the provider.
--
-- A link's secret is stored only as its SHA-256 (it is random, 256 bits, so a plain hash is
-- enough). The provider id is chosen when the link is made, so the SAML values the admin enters at
-- the IdP (entity ID, ACS URL) are known before any provider row exists. A provider made through
-- a link is a draft (disabled, never routed to) until the admin activates it after a passing test.
create table sso_setup_links (
  id uuid primary key,
  project_ref text not null references projects (ref) on delete cascade,
  secret_hash bytea not null unique,
  kind text not null check (kind in ('oidc', 'saml', 'any')),
  domains text[] not null,
  provider_id uuid not null unique,
  created_by_token uuid,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz,
  activated_at timestamptz
);
create index sso_setup_links_project on sso_setup_links (project_ref, created_at desc);

alter table sso_providers add column draft boolean not null default false;

-- A test sign-in is a flow that ends on the setup page instead of issuing a session.
alter table sso_flows add column setup_link_id uuid references sso_setup_links (id) on delete cascade;

-- What a test sign-in found, shown on the setup page; `config_version` is the provider's
-- updated_at when the test ran, so a change after a passing test needs a new test.
create table sso_setup_tests (
  id uuid primary key,
  link_id uuid not null references sso_setup_links (id) on delete cascade,
  provider_id uuid not null,
  config_version timestamptz not null,
  ok boolean not null,
  result jsonb not null,
  created_at timestamptz not null default now()
);
create index sso_setup_tests_link on sso_setup_tests (link_id, created_at desc);

-- Changes made through a setup link name the link as who made them (no owner, no token).
alter table audit_log add column setup_link_id uuid;
