-- Why a backfill is not enqueueing right now (backpressure: the dispatchers are behind, or its
-- webhook's circuit is open; src/outbox/backfill.ts), or null.
alter table webhook_backfills add column waiting text;
