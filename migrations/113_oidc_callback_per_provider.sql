-- Each OIDC provider gets a redirect URI of its own, {project}/auth/v1/sso/oidc/callback/{id}
-- (src/sso/oidc/settings.ts), and a callback is taken only at the URI of its flow's provider. With
-- one URI for every provider of a project, the flow was chosen by the state alone, so a code one
-- IdP issued could be sent to another provider's token endpoint (an IdP mix-up, RFC 9700 4.4):
-- a setup link's holder could lure a user of the project's IdP and sign in as them (found by an
-- attacker's review, 2026-11-29). OIDC providers made before keep the shared URI their IdP has
-- registered until the owner moves them (PATCH {"callback": "own"}); every new one has its own.
alter table sso_providers add column oidc_shared_callback boolean not null default false;
update sso_providers set oidc_shared_callback = true where kind = 'oidc';
