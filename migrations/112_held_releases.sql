-- A hold the releaser has put back (src/delivery/endpoints/releaser.ts): the held record's attempt,
-- written in the transaction that deletes the hold and produces its copy. While the hold exists, a
-- copy of the record read again (its dispatcher killed before the offset commit) is done with
-- (src/delivery/ledger.ts); once the hold is put back, this row keeps saying so until the released
-- copy's outcome is in the ledger, so the original is not sent beside the released copy. Pruned
-- with the ledger after LEDGER_RETENTION (src/delivery/housekeeping.ts): the original can be read
-- again only while its topic keeps it.
create table held_releases (
  project_ref text not null references projects (ref) on delete cascade,
  message_id uuid not null,
  run integer not null,
  attempt integer not null,
  released_at timestamptz not null default now(),
  primary key (project_ref, message_id, run, attempt)
);
create index held_releases_released_at on held_releases using brin (released_at);
