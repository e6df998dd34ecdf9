-- What the connector supervisor (src/outbox/supervisor.ts) knows about each project's Debezium
-- connector and replication slot, written by the one process that supervises, read by /health and
-- the dashboard from any process. The restart backoff lives here too, so it survives the
-- supervisor moving to another process.
create table connector_supervision (
  project_ref text primary key references projects (ref) on delete cascade,
  connector text not null,
  -- running | restarting | failing | waiting_for_database | missing
  state text not null,
  -- restarts since the connector was last seen running for a while (drives the backoff)
  restarts int not null default 0,
  total_restarts int not null default 0,
  last_restart_at timestamptz,
  next_restart_at timestamptz,
  -- first line of the failed task's trace (Connect's), as last seen
  last_failure text,
  -- replication slot: WAL it retains, WAL not yet confirmed by the connector, and since when it has
  -- had changes waiting with no consumer (connector down): the capture lag while it is down
  slot_retained_bytes bigint,
  slot_pending_bytes bigint,
  slot_wal_status text,
  slot_safe_wal_bytes bigint,
  capture_lag_seconds double precision,
  slot_waiting_since timestamptz,
  checked_at timestamptz not null default now()
);

-- one row: which process supervises and when it last checked (a stale row means nobody does)
create table connector_supervisor (
  id int primary key default 1 check (id = 1),
  holder text not null,
  checked_at timestamptz not null
);
