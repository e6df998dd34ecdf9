-- Row filters of database webhooks (src/outbox/row-filter.ts; docs/delivery.md, "Row filters"):
-- the owner's JSON condition, compiled into the WHEN clause of the webhook's triggers. null: every
-- change fires.
alter table webhooks add column filter jsonb;
