-- Endpoint protection (issue 19, items 1-3): a circuit breaker per endpoint, messages held while it
-- is open or while a rate limit is reached, and automatic disabling of a webhook that keeps failing.
-- The code is src/delivery/endpoints/; docs/delivery.md ("Endpoint protection") says how it behaves.
--
-- An endpoint is a webhook ('webhook:<id>') or, for base.http_request, a target host of a project
-- ('host:<hostname>'). A row exists only for an endpoint that has failed recently or is not closed:
-- healthy endpoints cost nothing here.
create table endpoint_health (
  project_ref text not null references projects (ref) on delete cascade,
  endpoint text not null,
  webhook_id uuid references webhooks (id) on delete cascade,
  state text not null default 'closed' check (state in ('closed', 'open', 'half_open')),
  -- the current failure window (CIRCUIT_WINDOW): attempts and endpoint-fault failures counted in it
  window_started_at timestamptz not null default now(),
  window_attempts integer not null default 0,
  window_failures integer not null default 0,
  last_error text,
  last_failure_at timestamptz,
  -- open: when it opened, and when the next probe may go (cool-down, doubled per failed probe)
  opened_at timestamptz,
  probe_at timestamptz,
  -- half_open: when the one probe was released (a probe that never reports is released again)
  probe_claimed_at timestamptz,
  failed_probes integer not null default 0,
  probes integer not null default 0,
  -- start of the current failing streak (first opening since the last close): auto-disable counts from here
  failing_since timestamptz,
  updated_at timestamptz not null default now(),
  primary key (project_ref, endpoint)
);
create index on endpoint_health (webhook_id) where webhook_id is not null;

-- Messages waiting for their endpoint (circuit open or half-open, or rate limit reached): the Kafka
-- record as it was (headers and value bytes), taken off the topic without an attempt. The releaser
-- puts them back on the outbox topic in id order. One row per attempt key, so a record read twice
-- (a crash before its offset was committed) is held once.
create table held_messages (
  id bigserial primary key,
  project_ref text not null references projects (ref) on delete cascade,
  endpoint text not null,
  message_id uuid not null,
  run integer not null,
  attempt integer not null,
  reason text not null check (reason in ('circuit', 'rate_limit')),
  headers jsonb not null,
  value bytea not null,
  held_at timestamptz not null default now(),
  unique (message_id, run, attempt)
);
create index on held_messages (project_ref, endpoint, id);

-- The rate limiter's state per rate-limited endpoint: GCRA's theoretical arrival time, shared by
-- every dispatcher process (src/delivery/endpoints/rate.ts).
create table endpoint_rate (
  project_ref text not null references projects (ref) on delete cascade,
  endpoint text not null,
  tat timestamptz not null,
  primary key (project_ref, endpoint)
);

alter table webhooks add column rate_limit integer check (rate_limit between 1 and 10000);
-- set when the service disabled the webhook itself ('failing'); cleared when it is enabled again
alter table webhooks add column disabled_reason text;
alter table webhooks add column disabled_at timestamptz;
-- since when its endpoint had been failing when the service disabled it (the circuit is forgotten then)
alter table webhooks add column disabled_failing_since timestamptz;
