-- Slow start (src/delivery/endpoints/window.ts): each endpoint gets a window of attempts in flight
-- per dispatcher process that grows while it answers and shrinks when it fails. An owner may cap it
-- per webhook: max_in_flight (1..1000), or null for the adaptive window alone.
alter table webhooks add column max_in_flight integer check (max_in_flight between 1 and 1000);

-- A message that finds ENDPOINT_WINDOW_QUEUE others waiting for its endpoint's window is held, with
-- reason 'concurrency' (released like a rate-limit hold, at CIRCUIT_RELEASE_RATE).
alter table held_messages drop constraint held_messages_reason_check;
alter table held_messages add constraint held_messages_reason_check check (reason in ('circuit', 'rate_limit', 'concurrency'));
