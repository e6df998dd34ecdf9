-- Tenant keys for messages (issue 25, item 5). A message id is made in the project's own database
-- (base._enqueue: gen_random_uuid()), and that database is the customer's: whoever may write there
-- can put a record into base.outbox with any id, e.g. one copied from another project's request
-- (every webhook request carries it as webhook-id). Keyed by the message id alone, such a record
-- passed for the other project's message: in the ledger, whichever came second was skipped as
-- already recorded, and a final outcome of one ended the other's pending retries (lost); and the
-- two shared one delivery row, attempt history and callback row. The project of a record is
-- trustworthy: Kafka Connect adds it as a header per connector, the database cannot forge it. So
-- every per-message key now starts with the project (docs/delivery.md, Guarantees, "One project's
-- messages are its own"):
--
--   delivery_ledger     (project_ref, message_id, run, attempt)   was (message_id, run, attempt)
--   delivery_attempts   (project_ref, delivery_id, run, attempt)  was (delivery_id, run, attempt)
--   deliveries          (project_ref, id)                         was (id)
--   delivery_callbacks  (project_ref, message_id, run)            was (message_id, run)
--
-- Existing rows are kept. The ledger and the attempts had no project column: each row takes the
-- project of its delivery row (deliveries.id was unique until now, so there is exactly one, and the
-- new keys stay unique). A row without a delivery row (the projector was behind when this ran) gets
-- project_ref '', which is no project's (refs start with a letter): the worst it does is let a
-- record whose outcome it holds be attempted once more if it is read again (at least once), and
-- housekeeping deletes it after LEDGER_RETENTION. Ids two projects already shared before this
-- migration cannot be told apart in the old rows: they stay with the project of the delivery row.
--
-- How, for tables that can be large (the ledger holds LEDGER_RETENTION of attempts, deliveries and
-- their attempts are never pruned):
--   - the ledger and the attempts are copied once into tables of the new shape and their indexes
--     built afterwards (one sequential write and one sorted index build each), instead of adding a
--     column and updating every row (a second version of every row, every index updated row by
--     row, and the table left at twice its size). The ledger is copied in its physical order, by
--     a scan with one index probe per row, so its BRIN index on recorded_at (housekeeping) stays
--     as selective as before; a hash join could reorder it;
--   - deliveries and delivery_callbacks already have project_ref: only their primary key is
--     replaced (one index build each; no table rewrite);
--   - the new tables are analysed here, so the first statements after the migration are planned
--     with statistics.
-- Everything runs in the migration's one transaction. Measured on the shared 2-core development
-- machine with 1M deliveries, 1.33M attempts, 356k ledger rows and 27k callback rows: 7 s (ledger
-- copy 1.3 s + its indexes 0.8 s, attempts copy 2.1 s + its key 1.5 s, deliveries key 0.9 s,
-- callbacks key 0.02 s, analyse 0.2 s), during which deliveries wait (the ledger check and the
-- projection block on these tables' locks) and nothing is lost.
--
-- A dispatcher or projector still running the code from before this migration (a rolling upgrade)
-- names the old keys in its `on conflict` clauses, which now match no unique index: its ledger
-- writes and projection batches fail until that process is replaced, and its records stay
-- uncommitted and are taken again by the new code (at least once; nothing is lost), as with
-- migration 102.

-- 1. delivery_ledger
create table delivery_ledger_new (
  project_ref text not null,
  message_id uuid not null,
  run integer not null,
  attempt integer not null,
  outcome text not null,
  final boolean not null,
  recorded_at timestamptz not null default now()
);
insert into delivery_ledger_new (project_ref, message_id, run, attempt, outcome, final, recorded_at)
select coalesce((select d.project_ref from deliveries d where d.id = l.message_id), ''), l.message_id, l.run, l.attempt, l.outcome, l.final, l.recorded_at
  from delivery_ledger l;
drop table delivery_ledger;
alter table delivery_ledger_new rename to delivery_ledger;
alter table delivery_ledger add constraint delivery_ledger_pkey primary key (project_ref, message_id, run, attempt);
create index delivery_ledger_final on delivery_ledger (project_ref, message_id, run) where final;
create index delivery_ledger_recorded_at on delivery_ledger using brin (recorded_at);

-- 2. delivery_attempts (before the key of deliveries changes: the copy looks rows up by id)
create table delivery_attempts_new (
  project_ref text not null,
  delivery_id uuid not null,
  run integer not null,
  attempt integer not null,
  outcome text not null,
  http_status integer,
  smtp_code integer,
  error text,
  response_body text,
  duration_ms integer,
  started_at timestamptz not null,
  finished_at timestamptz not null
);
insert into delivery_attempts_new (project_ref, delivery_id, run, attempt, outcome, http_status, smtp_code, error, response_body, duration_ms, started_at, finished_at)
select coalesce(d.project_ref, ''), a.delivery_id, a.run, a.attempt, a.outcome, a.http_status, a.smtp_code, a.error, a.response_body, a.duration_ms, a.started_at, a.finished_at
  from delivery_attempts a left join deliveries d on d.id = a.delivery_id;
drop table delivery_attempts;
alter table delivery_attempts_new rename to delivery_attempts;
alter table delivery_attempts add constraint delivery_attempts_outcome_check check (outcome in ('delivered', 'failed', 'dead'));
alter table delivery_attempts add constraint delivery_attempts_pkey primary key (project_ref, delivery_id, run, attempt);

-- 3. deliveries: the listing indexes (project_ref, …) stay as they are
alter table deliveries drop constraint deliveries_pkey;
alter table deliveries add constraint deliveries_pkey primary key (project_ref, id);

-- 4. delivery_callbacks
alter table delivery_callbacks drop constraint delivery_callbacks_pkey;
alter table delivery_callbacks add constraint delivery_callbacks_pkey primary key (project_ref, message_id, run);

analyze delivery_ledger;
analyze delivery_attempts;
