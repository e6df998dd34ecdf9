-- Sessions and sign-in codes remember how the user authenticated (amr: sso/oidc or sso/saml), so
-- access tokens can say so even after the provider that started them is deleted. The indexes
-- serve the lookups of sign-out (a user's sessions), reuse detection (a session's refresh
-- tokens) and user deletion/listing (a user's identities).
alter table sessions add column amr_method text not null default 'sso';
alter table auth_codes add column amr_method text not null default 'sso';
create index sessions_user on sessions (user_id);
create index refresh_tokens_session on refresh_tokens (session_id);
create index identities_user on identities (user_id);
create index sso_flows_expires on sso_flows (expires_at);
