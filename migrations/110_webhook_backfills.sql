-- Backfills of database webhooks (docs/delivery.md, "Backfills"): the rows already in a webhook's
-- table sent as events of their own type (BACKFILL), in primary-key order, at `rate` rows a second.
-- The cursor lives in the project database (base.backfills), written in the transaction that
-- enqueues the rows, so a restart neither skips nor repeats a row; this row is the owner's view
-- (state, progress) and the lease a dispatcher process holds while it works on it.
create table webhook_backfills (
  id uuid primary key,
  project_ref text not null references projects (ref) on delete cascade,
  webhook_id uuid not null references webhooks (id) on delete cascade,
  state text not null check (state in ('running', 'paused', 'done', 'cancelled', 'failed')),
  filter jsonb,
  rate integer not null check (rate between 1 and 10000),
  rows_done bigint not null default 0,
  rows_estimated bigint,
  rows_per_second double precision,
  errors integer not null default 0,
  errors_in_a_row integer not null default 0,
  last_error text,
  lease_owner text,
  lease_until timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  finished_at timestamptz
);
-- one backfill under way per webhook
create unique index webhook_backfills_active on webhook_backfills (webhook_id) where state in ('running', 'paused');
create index webhook_backfills_running on webhook_backfills (updated_at) where state = 'running';
create index webhook_backfills_of_webhook on webhook_backfills (project_ref, webhook_id, created_at desc);
