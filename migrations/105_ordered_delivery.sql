-- Ordered delivery (docs/delivery.md, "Ordered delivery"; src/delivery/ordering/).
--
-- webhooks.ordering: 'row' delivers the messages of one row of the table in commit order (its
-- trigger keys them by primary key); 'none' sends each as soon as it is read. Webhooks created
-- before this migration keep 'none': their receivers were built for it.
alter table webhooks add column ordering text not null default 'none' check (ordering in ('none', 'row'));

-- A key whose oldest unfinished message could not be delivered at once (it failed and waits on the
-- retry ladder, or its endpoint holds it): that message is the key's head, and every later message
-- of the key waits in ordering_queue until the head has a final outcome. No row: the key flows.
create table ordering_heads (
  project_ref text not null,
  ordering_key text not null,
  message_id uuid not null,
  run int not null,
  seq bigint not null,
  -- 'retry': the head failed and is on the retry ladder; 'held': its endpoint holds it; 'next':
  -- taken from ordering_queue and put back on the outbox topic, not attempted yet
  reason text not null check (reason in ('retry', 'held', 'next')),
  -- since when the key has been blocked (kept while heads follow one another), and since when
  -- this message has been its head
  since timestamptz not null default now(),
  head_since timestamptz not null default now(),
  primary key (project_ref, ordering_key)
);
create index ordering_heads_message on ordering_heads (project_ref, message_id);

-- Messages behind a head, in seq (commit) order per key. The next one is deleted, produced to the
-- outbox topic and made the head in one transaction (a crash between the produce and the commit
-- puts it back twice: the ledger skips the copy already recorded).
create table ordering_queue (
  project_ref text not null,
  ordering_key text not null,
  seq bigint not null,
  message_id uuid not null,
  run int not null,
  attempt int not null,
  headers jsonb not null,
  value bytea not null,
  queued_at timestamptz not null default now(),
  primary key (project_ref, ordering_key, seq, message_id, run)
);
create index ordering_queue_message on ordering_queue (project_ref, message_id);

-- Each delivery knows its key and place (from the message), so the listing can show which key a
-- delivery is in and a manual retry can tell whether a later message of its key was delivered.
alter table deliveries add column ordering_key text;
alter table deliveries add column seq bigint;
create index deliveries_ordering on deliveries (project_ref, ordering_key, seq) where ordering_key is not null;
