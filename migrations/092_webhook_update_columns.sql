-- Column filters for UPDATE webhooks (issue 19, item 5): when set, an UPDATE fires the webhook only
-- if one of these columns changed value (old IS DISTINCT FROM new). Null: every UPDATE fires.
-- The filter itself lives in the project database, as the WHEN clause of the webhook's UPDATE
-- trigger (src/outbox/webhook-triggers.ts); this column is the owner's setting it is built from.
alter table webhooks add column update_columns text[];
