-- Housekeeping (src/delivery/housekeeping.ts) deletes ledger rows and finished callback rows older
-- than LEDGER_RETENTION. Both tables are appended in time order, so BRIN indexes find the old end
-- for almost nothing per insert (a B-tree on the hot insert path would cost every delivery).
create index delivery_ledger_recorded_at on delivery_ledger using brin (recorded_at);
create index delivery_callbacks_updated_at on delivery_callbacks using brin (updated_at);
