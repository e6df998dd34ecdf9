-- Tenant keys for endpoint protection (issue 25, item 5). Every key that names per-project data
-- of migration 094 includes the project, so that a message id or a webhook id of one project can
-- never reach another project's rows (docs/delivery.md, "Endpoint protection", "One project's
-- endpoints are its own").
--
-- endpoint_health and endpoint_rate are keyed (project_ref, endpoint) already. What is left:
--
-- 1. held_messages was unique on (message_id, run, attempt) alone. A message id is chosen in the
--    project's own database (base.outbox), and is no secret (every request carries it as
--    webhook-id), so a project could write a record with another project's message id: held first,
--    its row made the other project's record "already held" (insert ... on conflict do nothing),
--    and that record's offset was then committed with no row: a message lost. The key now starts
--    with the project: a record read twice is still held once, within its project.
--    Existing rows are kept: they are unique on the three columns, so on the four too.
--    A dispatcher still running the code from before this migration (a rolling upgrade) names the
--    old key in its insert (gate.ts) and fails to hold until it is replaced: that attempt ends
--    'internal error during the attempt' and goes up the retry ladder, so nothing is lost.
alter table held_messages add constraint held_messages_project_attempt_key unique (project_ref, message_id, run, attempt);
alter table held_messages drop constraint held_messages_message_id_run_attempt_key;

-- 2. endpoint_health.webhook_id referenced webhooks (id) alone, so a row of one project could name
--    another project's webhook, and giving the endpoint up (releaser.ts) disabled that webhook.
--    The reference is now (project_ref, webhook_id): the webhook must be one of the row's project.
--    The code checks the project as well (releaser.ts, health.ts); this makes such a row
--    impossible to write. Rows that break it are circuit bookkeeping of a webhook that is not the
--    project's (nothing is lost: the circuit starts afresh, and what is held for that endpoint is
--    released and ended by the webhook channel, which reads webhooks within the project only).
alter table webhooks add constraint webhooks_project_ref_id_key unique (project_ref, id);
delete from endpoint_health h
 where h.webhook_id is not null
   and not exists (select 1 from webhooks w where w.id = h.webhook_id and w.project_ref = h.project_ref);
alter table endpoint_health drop constraint endpoint_health_webhook_id_fkey;
alter table endpoint_health add constraint endpoint_health_webhook_fkey
  foreign key (project_ref, webhook_id) references webhooks (project_ref, id) on delete cascade;
