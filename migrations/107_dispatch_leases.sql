-- Partition leases for ordered messages (src/delivery/consume/handoff.ts): per consumer group and
-- partition, the one process that may attempt its ordered messages, until `until` unless renewed.
-- A process that lost a partition keeps its lease while its ordered attempts there are in flight.
create table dispatch_leases (
  group_id text not null,
  topic text not null,
  partition int not null,
  owner text not null,
  until timestamptz not null,
  primary key (group_id, topic, partition)
);
