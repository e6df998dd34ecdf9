-- Access-token signing key rotation (src/sso/signing-keys.ts): public keys rotated out, each
-- {jwk, retired_at, valid_until}. They stay in the project's JWKS and verify tokens until
-- valid_until (retirement + ACCESS_TOKEN_TTL + skew); expired entries are dropped at the next rotation.
alter table projects add column jwt_previous_keys jsonb not null default '[]';
