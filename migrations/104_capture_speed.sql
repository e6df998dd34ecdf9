-- Two speeds of a running connector (src/outbox/capture-speed.ts): 'fast' reads the replication
-- stream every 10 ms (the template's poll.interval.ms), 'slow' every CAPTURE_SLOW_POLL, for projects
-- that send a message now and then. Connectors registered before this migration run fast.
alter table connector_supervision add column capture_speed text not null default 'fast' check (capture_speed in ('fast', 'slow'));
alter table connector_supervision add column speed_since timestamptz;
