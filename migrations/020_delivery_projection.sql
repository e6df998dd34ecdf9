-- Deliveries projection, additions for the delivery events (src/delivery/projector.ts): SMTP reply
-- codes beside HTTP statuses (email attempts), and an index for the kind filter of the listing.
alter table deliveries add column last_smtp_code integer;
alter table delivery_attempts add column smtp_code integer;
create index deliveries_kind on deliveries (project_ref, kind, created_at desc, id desc);
