-- Payload shaping of database webhooks (docs/delivery.md, "Payload shaping"):
--   columns:  the columns a message carries, applied in the trigger (the others never leave the
--             project database); null: all of them;
--   template: the request body as a JSON template, filled at send time (src/delivery/channels/
--             template.ts); null: the row-change payload.
alter table webhooks add column columns text[], add column template jsonb;
-- Test events (POST .../webhooks/{id}/test): the message ids the API enqueued as tests, so the
-- deliveries API can mark them. Deleted with the project; a row outlives its delivery harmlessly.
create table webhook_test_events (
  project_ref text not null references projects(ref) on delete cascade,
  message_id uuid not null,
  webhook_id uuid not null,
  created_at timestamptz not null default now(),
  primary key (project_ref, message_id)
);
