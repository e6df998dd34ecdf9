-- Idle projects cost nothing (src/outbox/idle-capture.ts): the supervisor stops the connector of a
-- project with no message for CAPTURE_IDLE_AFTER (state 'idle') and resumes it at the first write
-- to its database, seen as a change of the database's write counters in pg_stat_database.
alter table connector_supervision add column stopped_at timestamptz;
-- tup_inserted + tup_updated + tup_deleted of the project's database when its connector stopped
alter table connector_supervision add column wake_writes bigint;
alter table connector_supervision add column resumed_at timestamptz;
