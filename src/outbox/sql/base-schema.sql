-- Installed into a project's database when its outbox is enabled (src/outbox/enable.ts).
-- Idempotent: every statement may run again on an installed database. Runs in one transaction
-- under an advisory lock, as the database owner.
--
-- base.outbox is always empty: each enqueue inserts and deletes its row in the caller's
-- transaction. Debezium reads the insert from the WAL after commit; a rollback leaves nothing in
-- the WAL to read, so nothing is sent.

-- (the install's search_path is pinned to pg_catalog, pg_temp: a schema is named where one is created)
create extension if not exists pgcrypto with schema public;
create schema if not exists base;
revoke all on schema base from public;

do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'base_callback') then
    create role base_callback nologin;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'anon') then
    create role anon nologin;
  end if;
  if not exists (select 1 from pg_roles where rolname = 'authenticated') then
    create role authenticated nologin;
  end if;
end $$;

create table if not exists base.outbox (
  id uuid primary key,
  aggregatetype text not null default 'message',
  aggregateid text not null,
  type text not null check (type in ('webhook', 'http', 'email')),
  payload jsonb not null,
  created_at timestamptz not null default clock_timestamp()
);
-- Ordered messages (docs/delivery.md, "Ordered delivery") carry `seq`, taken from this sequence
-- while the caller holds what orders them (the row's lock, or the key's advisory lock): for one
-- ordering key, seq order is commit order.
create sequence if not exists base.outbox_seq;
revoke all on sequence base.outbox_seq from public;
-- Backfills (src/outbox/backfill.ts): each one's cursor (the primary key of the last row enqueued)
-- and count, written in the transaction that enqueues its rows.
create table if not exists base.backfills (
  id uuid primary key,
  cursor jsonb,
  rows_done bigint not null default 0,
  updated_at timestamptz not null default now()
);
revoke all on base.backfills from public;
-- Debezium needs the old row identity only for deletes, which the Outbox Event Router ignores.
alter table base.outbox replica identity default;
revoke all on base.outbox from public;

-- The wake of an idle project (src/outbox/idle-capture.ts). While the project's connector is
-- stopped, the service sets `idle`, and every enqueue asks PostgreSQL to publish this backend's
-- statistics as soon as its transaction ends: the service wakes the connector when the database's
-- write counters (pg_stat_database) move. Without it, a backend that published its counters less
-- than a second earlier (an application connection that keeps writing) holds them back up to 10 s
-- (PGSTAT_IDLE_INTERVAL, PostgreSQL 15+). A busy project (connector running) pays one read of a
-- one-row table per message.
create table if not exists base.capture (
  one boolean primary key default true check (one),
  idle boolean not null default false
);
insert into base.capture (one) values (true) on conflict do nothing;
-- When `idle` was last set (the database's clock): a restart or a statistics reset after it means
-- the write counters are not the series W0 was read from (src/outbox/quiet-database.ts).
alter table base.capture add column if not exists idle_since timestamptz;
-- The prefix of the logical decoding messages the webhook trigger writes (base.webhook_trigger), and
-- the only prefix the connector reads (message.prefix.include.list). Any role may call
-- pg_logical_emit_message, so the prefix is what tells our messages from a forgery: it is random
-- per project, readable only by the schema's owner (this table), and never written into a function
-- body (pg_proc.prosrc is readable by everyone). Kept across re-installs. Null until the service
-- has seen a task of the connector read with it (src/outbox/messages.ts): until then the trigger
-- writes a row of base.outbox, since a task with an older config would pass a message on to a
-- topic nobody reads.
alter table base.capture add column if not exists message_prefix text;
revoke all on base.capture from public;

-- pg_stat_force_next_flush() exists from PostgreSQL 15 (before it, backends sent their counters
-- every 500 ms anyway) and may be withheld from a database owner who is not a superuser: then the
-- wake is as fast as PostgreSQL publishes on its own, and still never missed.
do $$
begin
  if to_regprocedure('pg_catalog.pg_stat_force_next_flush()') is not null
     and has_function_privilege('pg_catalog.pg_stat_force_next_flush()', 'execute') then
    create or replace function base._publish_stats() returns void language sql
      set search_path = pg_catalog, pg_temp as 'select pg_catalog.pg_stat_force_next_flush()';
  else
    create or replace function base._publish_stats() returns void language sql
      set search_path = pg_catalog, pg_temp as 'select';
  end if;
end $$;

-- The one place a message is written. Not callable by API roles. `ordering_key` (optional) makes
-- the message's Kafka key `key:<ordering_key>` instead of its id, so the messages of one key share a
-- partition, and gives it a `seq`; the caller holds the key's advisory lock (base.http_request).
drop function if exists base._enqueue(text, jsonb);
create or replace function base._enqueue(kind text, body jsonb, ordering_key text default null)
returns uuid
language plpgsql
security definer
set search_path = pg_catalog, base, pg_temp
as $$
declare
  msg_id uuid := gen_random_uuid();
  lane text := case when ordering_key is not null then 'key:' || ordering_key end;
  limit_bytes constant integer := 1048576;
begin
  -- A message over 1 MB of JSON is refused in the caller's transaction: committed, it would reach
  -- Kafka Connect's producer as a record over its limit (8 MB here), fail the connector's task on
  -- every restart, and hold every later message of the project behind it (found by review,
  -- 2026-11-29). Webhook rows have the 1 MB rule (base._webhook_payload) instead. Measured on the
  -- text itself: a numeric such as 1e1000 is a few bytes of jsonb and a thousand characters of JSON,
  -- so the binary size bounds nothing (review, 2026-11-29).
  if octet_length(body::text) > limit_bytes then
    raise exception 'base.%: the message is % bytes of JSON, over the limit of % (1 MB)', case kind when 'email' then 'send_email' else 'http_request' end, octet_length(body::text), limit_bytes
      using errcode = '54000', hint = 'send a reference to the data (an id, a URL) rather than the data itself';
  end if;
  insert into base.outbox (id, aggregateid, type, payload)
  values (msg_id, coalesce(lane, msg_id::text), kind,
          body || jsonb_build_object('id', msg_id, 'kind', kind, 'created_at', to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
               || case when lane is not null then jsonb_build_object('ordering_key', lane, 'seq', nextval('base.outbox_seq'::regclass)) else '{}'::jsonb end);
  delete from base.outbox where id = msg_id;
  if (select idle from base.capture) then perform base._publish_stats(); end if;
  return msg_id;
end;
$$;

create or replace function base._check_callback(callback_function text)
returns void
language plpgsql
immutable
as $$
begin
  if callback_function is not null
     and callback_function !~ '^[A-Za-z_][A-Za-z0-9_$]{0,62}\.[A-Za-z_][A-Za-z0-9_$]{0,62}$' then
    raise exception 'callback_function must be schema.function (unquoted identifiers), got %', callback_function
      using errcode = '22023';
  end if;
end;
$$;

-- `ordering_key`: calls sharing a key are delivered one after the other, in commit order
-- (docs/delivery.md, "Ordered delivery"). Transactions enqueueing the same key take its advisory
-- lock until they end, so they commit in the order they took their seq (as two UPDATEs of one row do).
drop function if exists base.http_request(text, text, jsonb, jsonb, text, integer);
create or replace function base.http_request(
  method text,
  url text,
  headers jsonb default '{}'::jsonb,
  body jsonb default null,
  callback_function text default null,
  timeout_ms integer default null,
  ordering_key text default null
)
returns uuid
language plpgsql
security definer
set search_path = pg_catalog, base, pg_temp
as $$
begin
  if method is null or upper(method) not in ('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS') then
    raise exception 'base.http_request: unknown HTTP method %', coalesce(method, 'NULL') using errcode = '22023';
  end if;
  if url is null or url !~* '^(https?://|\{\{secret:[A-Za-z_][A-Za-z0-9_]{0,63}\}\})' then
    raise exception 'base.http_request: url must start with http:// or https:// (or a {{secret:NAME}} placeholder)' using errcode = '22023';
  end if;
  if headers is not null and jsonb_typeof(headers) <> 'object' then
    raise exception 'base.http_request: headers must be a JSON object of strings' using errcode = '22023';
  end if;
  if headers is not null and exists (select 1 from jsonb_each(headers) h where jsonb_typeof(h.value) <> 'string') then
    raise exception 'base.http_request: every header value must be a string' using errcode = '22023';
  end if;
  if timeout_ms is not null and (timeout_ms < 100 or timeout_ms > 60000) then
    raise exception 'base.http_request: timeout_ms must be between 100 and 60000, got %', timeout_ms using errcode = '22023';
  end if;
  if ordering_key is not null and (ordering_key = '' or octet_length(ordering_key) > 200) then
    raise exception 'base.http_request: ordering_key must be 1 to 200 bytes, got %', octet_length(ordering_key) using errcode = '22023';
  end if;
  perform base._check_callback(callback_function);
  if ordering_key is not null then
    perform pg_advisory_xact_lock(hashtextextended('base.ordering_key:' || ordering_key, 0));
  end if;
  return base._enqueue('http', jsonb_build_object(
    'method', upper(method), 'url', url, 'headers', coalesce(headers, '{}'::jsonb), 'body', body,
    'callback_function', callback_function, 'timeout_ms', timeout_ms), ordering_key);
end;
$$;

create or replace function base.send_email(
  recipient text,
  subject text,
  html text default null,
  text_body text default null,
  callback_function text default null
)
returns uuid
language plpgsql
security definer
set search_path = pg_catalog, base, pg_temp
as $$
begin
  -- deliberately simple syntax check: local@domain.tld, no spaces, one @
  if recipient is null or recipient !~ '^[^@\s<>(),;:"]+@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$' then
    raise exception 'base.send_email: recipient % is not a valid email address', coalesce(quote_literal(recipient), 'NULL') using errcode = '22023';
  end if;
  if coalesce(subject, '') = '' and coalesce(html, '') = '' and coalesce(text_body, '') = '' then
    raise exception 'base.send_email: an email needs a subject or a body' using errcode = '22023';
  end if;
  perform base._check_callback(callback_function);
  return base._enqueue('email', jsonb_build_object(
    'recipient', recipient, 'subject', coalesce(subject, ''), 'html', html, 'text', text_body,
    'callback_function', callback_function));
end;
$$;

-- Database webhooks: one trigger per webhook, TG_ARGV[0] is the webhook id. The URL, headers,
-- timeout, body template and signing secret are not copied here: the dispatcher reads them at
-- send time. More arguments, when there (src/outbox/webhook-triggers.ts), are plain text, read
-- without parsing anything per row:
--   'v2', n, then n key columns, then the columns the message carries (payload shaping: the others
--   never leave the database; none: all). The key columns are the table's primary key, for
--   `ordering: "row"`: messages are keyed `row:<webhook id>:<key as JSON array>`, the old key for
--   an UPDATE that changes it, and carry a seq (the row's lock orders them).
--   'row', then the key columns: what triggers installed by an earlier build pass; still read.
--
-- It runs for every row written to a hooked table, inside the customer's transaction, so it is
-- kept cheap (docs/benchmark.md, tuning log): the size check serialises the row to text only when
-- its binary size says it might be over the limit (JSON text is at most 6 bytes per byte of jsonb:
-- the worst is a control character escaped as \u00XX), and the payload is built by
-- base._webhook_payload, which is neither security definer nor sets a search_path (both cost a GUC
-- switch per call): it runs with the trigger's. Measured on 50,000-row inserts (best 2 of 5, run
-- twice): 2.28-2.37 s, against 2.31-2.60 s for the trigger before payload shaping; with `columns`
-- set, 2.68-2.78 s.
-- Column types of `rel` through which serialising its rows (to_jsonb) or, with `coerced`, typing
-- values into it (jsonb_populate_record) would run code that the database's users wrote: a cast to
-- json or jsonb (to_jsonb calls it) whose function a non-superuser owns, or, when coerced, a domain
-- a non-superuser owns that has a CHECK (its expression may reach any code, e.g. through
-- query_to_xml). The webhook trigger runs as schema base's owner and backfills and previews on the
-- service's own connection (a superuser on managed projects), so such code would run with those
-- rights (found by review, 2026-11-29: an enum's cast to json made its owner a superuser); they
-- refuse such tables instead. What superusers own counts as built in (a trusted extension's
-- objects are; a function a user added to an extension is not). The first such type with the
-- reason, or null.
create or replace function base._user_code_in(rel oid, coerced boolean default false)
returns text
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
  with recursive t(oid) as (
      select a.atttypid from pg_attribute a where a.attrelid = rel and a.attnum > 0 and not a.attisdropped
    union
      select x.oid
        from t join pg_type ty on ty.oid = t.oid
       cross join lateral (
               select ty.typelem where ty.typelem <> 0
               union all select ty.typbasetype where ty.typbasetype <> 0
               union all select a.atttypid from pg_attribute a
                          where ty.typrelid <> 0 and a.attrelid = ty.typrelid and a.attnum > 0 and not a.attisdropped
             ) x(oid)
  )
  select format_type(t.oid, null) || ' (' || u.why || ')'
    from t cross join lateral (
           select 'a cast to json' as why from pg_cast c
             join pg_proc f on f.oid = c.castfunc join pg_roles r on r.oid = f.proowner
            where c.castsource = t.oid and c.casttarget in ('json'::regtype, 'jsonb'::regtype) and c.castmethod = 'f' and not r.rolsuper
           union all
           select 'a domain with a CHECK' from pg_type d join pg_roles r on r.oid = d.typowner
            where coerced and d.oid = t.oid and d.typtype = 'd' and not r.rolsuper
              and exists (select 1 from pg_constraint k where k.contypid = d.oid and k.contype = 'c')
         ) u
   where t.oid >= 16384
   limit 1
$$;
revoke all on function base._user_code_in(oid, boolean) from public;

create or replace function base.webhook_trigger()
returns trigger
language plpgsql
security definer
set search_path = pg_catalog, base, pg_temp
as $$
declare
  rec jsonb;
  old_rec jsonb;
  unsafe text;
  user_casts boolean;
  message text;
  first_key integer := 2;
  keys integer := 0;
  columns jsonb;
  key_source jsonb;
  key_values jsonb;
  lane text;
  payload jsonb;
  msg_id uuid := gen_random_uuid();
  idle boolean;
  prefix text;
  body jsonb;
begin
  -- to_jsonb calls a cast to json of a type the database's users made, and here it would run as
  -- this function's owner (base._user_code_in). An index probe of pg_cast a row, in the statement
  -- that reads base.capture: 50,000-row inserts, best of 5, took +4-9 % with the probe as a
  -- statement of its own, and are within the spread so (2,078 / 2,248 ms with it, 2,144 / 2,082
  -- without; bench/trigger-probe.ts). The types are looked at only while such a cast exists
  -- anywhere in the database.
  select c.idle, c.message_prefix,
         exists (select 1 from pg_cast k join pg_proc f on f.oid = k.castfunc join pg_roles r on r.oid = f.proowner
                  where k.oid >= 16384 and k.casttarget in ('json'::regtype, 'jsonb'::regtype) and k.castmethod = 'f' and not r.rolsuper)
    into idle, prefix, user_casts from base.capture c;
  if user_casts then
    unsafe := base._user_code_in(tg_relid);
    if unsafe is not null then
      raise exception 'webhook %: %.% has a column of type %: a webhook will not serialise it, as the cast would run with the rights of schema base''s owner', tg_argv[0], tg_table_schema, tg_table_name, unsafe
        using errcode = '42501', hint = 'drop the cast, or remove the webhook (docs/security.md, "The project database''s own users")';
    end if;
  end if;
  rec := case when tg_op in ('INSERT', 'UPDATE') then to_jsonb(new) end;
  old_rec := case when tg_op in ('UPDATE', 'DELETE') then to_jsonb(old) end;
  if tg_nargs > 1 then
    if tg_argv[1] = 'row' then
      keys := tg_nargs - 2;
    else
      first_key := 3;
      keys := tg_argv[2]::integer;
      if tg_nargs > first_key + keys then
        columns := to_jsonb(tg_argv[first_key + keys : tg_nargs - 1]);
      end if;
    end if;
    if keys > 0 then
      key_source := coalesce(old_rec, rec);
      key_values := '[]'::jsonb;
      for i in first_key .. first_key + keys - 1 loop
        key_values := key_values || jsonb_build_array(key_source -> tg_argv[i]);
      end loop;
      lane := 'row:' || tg_argv[0] || ':' || key_values::text;
    end if;
  end if;
  payload := base._webhook_payload(tg_argv[0], tg_op, tg_table_schema, tg_table_name, rec, old_rec, columns);
  -- The message is a transactional logical decoding message, not a row of base.outbox (once the
  -- project's prefix is set; a row before): decoded at
  -- commit, in commit order, and never for a rollback, like the row, at a third less of the
  -- customer's INSERT (no heap tuple, no index entry, no dead row; docs/benchmark.md, eleventh and
  -- fifteenth rounds). The connector turns it into the row's shape (DecodeLogicalDecodingMessageContent,
  -- then the Outbox Event Router): the same fields as base.outbox, `payload` as JSON text.
  -- The wake of an idle project still works: the customer's own write moves the database's write
  -- counters (idle-capture.ts). Written out here rather than calling a helper: with a call (and
  -- the key read by a query), 50,000-row inserts took ~20 % longer.
  body := jsonb_build_object('id', msg_id, 'kind', 'webhook', 'created_at', payload ->> 'occurred_at', 'webhook_id', tg_argv[0], 'payload', payload)
          || case when lane is not null then jsonb_build_object('ordering_key', lane, 'seq', nextval('base.outbox_seq'::regclass)) else '{}'::jsonb end;
  if prefix is not null then
    message := '{"id":"' || msg_id || '","aggregatetype":"message","aggregateid":' || to_json(coalesce(lane, msg_id::text))::text
      || ',"type":"webhook","payload":' || to_json(body::text)::text || '}';
    -- the 1 MB rule measures the binary size first, and a numeric such as 1e131071 is a few bytes
    -- of jsonb and 131,072 characters of text: a row of them passed it and made a message over
    -- Connect's producer limit, which fails the connector on every restart (review, 2026-11-29).
    -- The whole message, once built, is refused in the writer's statement past 4 MB.
    if octet_length(message) > 4194304 then
      raise exception 'webhook %: the message for this row of %.% is % bytes of JSON, over 4 MB', tg_argv[0], tg_table_schema, tg_table_name, octet_length(message)
        using errcode = '54000';
    end if;
    -- as UTF-8 bytes whatever the database's encoding (pgoutput converts rows, not messages)
    perform pg_logical_emit_message(true, prefix, convert_to(message, 'UTF8'));
  else
    if octet_length(body::text) > 4194304 then
      raise exception 'webhook %: the message for this row of %.% is over 4 MB of JSON', tg_argv[0], tg_table_schema, tg_table_name using errcode = '54000';
    end if;
    insert into base.outbox (id, aggregateid, type, payload) values (msg_id, coalesce(lane, msg_id::text), 'webhook', body);
    delete from base.outbox where id = msg_id;
  end if;
  if idle then perform base._publish_stats(); end if;
  return null;
end;
$$;

-- The payload of one webhook message: the trigger's, a backfill's (op 'BACKFILL'), a test
-- event's or a preview's. `columns` (a JSON array, or null: all) narrows record and old_record. A
-- row over 1 MB keeps the columns whose JSON value is at most 1 KB and leaves out the rest
-- (truncated, truncated_columns). Neither this nor base._webhook_message is security definer or
-- sets a search_path: callers are the trigger (definer already) and the service's own connection.
create or replace function base._webhook_payload(webhook_id text, op text, sch text, tbl text, rec jsonb, old_rec jsonb, columns jsonb)
returns jsonb
language plpgsql
as $$
declare
  limit_bytes constant integer := 1048576;
  truncated boolean := false;
  dropped text[] := '{}';
  payload jsonb;
begin
  if columns is not null then
    if rec is not null then
      select coalesce(jsonb_object_agg(e.key, e.value), '{}') into rec from jsonb_each(rec) e where columns ? e.key;
    end if;
    if old_rec is not null then
      select coalesce(jsonb_object_agg(e.key, e.value), '{}') into old_rec from jsonb_each(old_rec) e where columns ? e.key;
    end if;
  end if;
  if rec is not null and pg_column_size(rec) > limit_bytes / 6 and octet_length(rec::text) > limit_bytes then
    select coalesce(jsonb_object_agg(key, value) filter (where octet_length(value::text) <= 1024), '{}'),
           coalesce(array_agg(key) filter (where octet_length(value::text) > 1024), '{}')
      into rec, dropped from jsonb_each(rec);
    truncated := true;
  end if;
  if old_rec is not null and pg_column_size(old_rec) > limit_bytes / 6 and octet_length(old_rec::text) > limit_bytes then
    select coalesce(jsonb_object_agg(key, value) filter (where octet_length(value::text) <= 1024), '{}'),
           dropped || coalesce(array_agg(key) filter (where octet_length(value::text) > 1024), '{}')
      into old_rec, dropped from jsonb_each(old_rec);
    truncated := true;
  end if;
  payload := jsonb_build_object(
    'type', op,
    'schema', sch,
    'table', tbl,
    'record', rec,
    'old_record', old_rec,
    'webhook_id', webhook_id,
    'occurred_at', to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'));
  if truncated then
    payload := payload || jsonb_build_object('truncated', true, 'truncated_columns', to_jsonb(array(select distinct unnest(dropped))));
  end if;
  return payload;
end;
$$;

-- One webhook message into base.outbox (the same row base._enqueue writes); `lane`: its ordering
-- key; `given_id`: the message id when the caller chose it (a test event), else a new one.
create or replace function base._webhook_message(webhook_id text, payload jsonb, lane text, given_id uuid default null)
returns uuid
language plpgsql
as $$
declare
  msg_id uuid := coalesce(given_id, gen_random_uuid());
begin
  -- as in the trigger: the 1 MB rule's binary shortcut does not bound numerics' text
  if octet_length(payload::text) > 4194304 then
    raise exception 'webhook %: the message is over 4 MB of JSON', webhook_id using errcode = '54000';
  end if;
  insert into base.outbox (id, aggregateid, type, payload)
  values (msg_id, coalesce(lane, msg_id::text), 'webhook',
          jsonb_build_object('id', msg_id, 'kind', 'webhook', 'created_at', payload ->> 'occurred_at', 'webhook_id', webhook_id, 'payload', payload)
          || case when lane is not null then jsonb_build_object('ordering_key', lane, 'seq', nextval('base.outbox_seq'::regclass)) else '{}'::jsonb end);
  delete from base.outbox where id = msg_id;
  return msg_id;
end;
$$;

-- How the service calls a callback function (src/delivery/callbacks/call.ts): on its own session,
-- after SET LOCAL ROLE base_callback, through this SECURITY DEFINER function owned by base_callback.
-- Inside a SECURITY DEFINER function PostgreSQL refuses SET ROLE, RESET ROLE and SET SESSION
-- AUTHORIZATION, so a callback (the project's code) cannot step back to the session's user, the
-- service's (a superuser on managed projects): with SET ROLE alone, a plain function granted to
-- base_callback could RESET ROLE and make its author superuser (found by review, 2026-11-29). An
-- installer that may not give the function to base_callback (not a member of it, on an external
-- database) leaves it SECURITY INVOKER: callbacks then run by SET ROLE alone (docs/security.md).
create or replace function base._callback(sch text, fn text, payload jsonb)
returns void
language plpgsql
security definer
as $$
begin
  execute pg_catalog.format('select %I.%I($1)', sch, fn) using payload;
end;
$$;
do $$
begin
  alter function base._callback(text, text, jsonb) owner to base_callback;
exception when insufficient_privilege then
  alter function base._callback(text, text, jsonb) security invoker;
  raise notice 'base._callback could not be given to base_callback (%): callbacks run by SET ROLE alone', sqlerrm;
end $$;

revoke all on all functions in schema base from public;
revoke all on all functions in schema base from anon, authenticated, base_callback;
grant usage on schema base to base_callback;
grant execute on function base._callback(text, text, jsonb) to base_callback;
-- The database's owner may enqueue directly: a managed project's own role, app_<ref>
-- (src/projects/managed-database.ts), as the quick start does; its other roles through functions of
-- the owner's. Nothing else of base is the owner's (the prefix stays the schema owner's).
do $$
declare
  owner name := (select pg_catalog.pg_get_userbyid(d.datdba) from pg_catalog.pg_database d where d.datname = pg_catalog.current_database());
begin
  if owner <> current_user and not (select r.rolsuper from pg_catalog.pg_roles r where r.rolname = owner) then
    execute pg_catalog.format('grant usage on schema base to %I', owner);
    execute pg_catalog.format('grant execute on function base.http_request(text, text, jsonb, jsonb, text, integer, text), base.send_email(text, text, text, text, text) to %I', owner);
  end if;
end $$;
-- base_callback only needs to resolve callback functions the project grants it; nothing in base.
