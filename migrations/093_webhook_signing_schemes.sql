-- Asymmetric webhook signatures (issue 19, item 4): a signing key of a webhook is either a shared
-- secret (scheme v1, HMAC-SHA256, `whsec_...`) or an ed25519 key pair (scheme v1a). For v1a,
-- secret_enc holds the sealed `whsk_...` secret key (same associated data as a whsec_ secret) and
-- public_key the `whpk_...` public key, in clear: it is meant to be handed to receivers. Rotation
-- works across schemes: every unexpired key signs, whatever its scheme.
alter table webhook_signing_secrets add column scheme text not null default 'v1' check (scheme in ('v1', 'v1a'));
alter table webhook_signing_secrets add column public_key text;
alter table webhook_signing_secrets add constraint webhook_signing_secrets_public_key check ((scheme = 'v1a') = (public_key is not null));
