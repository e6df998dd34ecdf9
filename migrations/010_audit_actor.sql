-- The audit trail names the owner token that made a change, not only the owner: an owner with
-- several tokens (a person, a CI job) can then tell who did what, and which token to revoke.
alter table audit_log add column token_id uuid;
