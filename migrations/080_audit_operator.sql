-- Changes made with the operator command (npm run admin -- create-project, set-plan, replay) are in
-- the project's audit trail too, naming the operator (OS user@host) instead of an owner token.
alter table audit_log add column operator text;
