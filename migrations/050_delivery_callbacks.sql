-- Callback work (src/delivery/callbacks.ts): one row per (delivery, run) whose final outcome has a
-- callback_function. The callbacks consumer inserts it when it reads the final event (so a replayed
-- event is not called twice); runners claim due rows with a lease, call, and either finish them
-- (ok / failed after CALLBACK_MAX_ATTEMPTS calls) or schedule the next call. What the owner sees is
-- projected from CallbackInvoked events into deliveries.callback_*.
create table delivery_callbacks (
  message_id uuid not null,
  run integer not null,
  project_ref text not null,
  function text not null,
  payload jsonb not null,
  status text not null default 'pending' check (status in ('pending', 'ok', 'failed')),
  attempts integer not null default 0,
  last_error text,
  next_attempt_at timestamptz not null default now(),
  claimed_until timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (message_id, run)
);
create index delivery_callbacks_due on delivery_callbacks (next_attempt_at) where status = 'pending';
