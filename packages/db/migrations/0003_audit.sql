-- The audit log: one row per tool call and per refused request. Append-only, hash-chained per server.
create table audit_events (
  seq bigint generated always as identity primary key,
  id uuid not null unique,
  at timestamptz not null,
  server text not null,
  chain_seq bigint not null,
  token_id text,
  token_label text,
  client_name text,
  client_version text,
  method text not null,
  tool text,
  arguments jsonb,
  outcome text not null,
  result_summary jsonb,
  duration_ms integer not null,
  request_id text not null,
  approval_id text,
  injection_suspected boolean not null default false,
  prev_hash text not null,
  hash text not null,
  unique (server, chain_seq)
);

create index audit_events_at on audit_events (at);
create index audit_events_server_at on audit_events (server, at);
create index audit_events_token on audit_events (token_id, at);
create index audit_events_tool on audit_events (tool, at);

-- Where `audit prune` cut a chain: the hash of the last removed event, signed, so that what remains still verifies.
create table audit_checkpoints (
  server text primary key,
  chain_seq bigint not null,
  hash text not null,
  pruned_before timestamptz not null,
  removed bigint not null,
  signature text not null,
  created_at timestamptz not null default now()
);

create function audit_events_refuse_change() returns trigger language plpgsql as $$
begin
  -- Only the table's owner (who could drop this trigger anyway) may prune, and only when it says so.
  if tg_op = 'DELETE' and current_setting('bulkhead.audit_prune', true) = 'on'
     and pg_has_role(current_user, (select relowner from pg_class where oid = tg_relid), 'MEMBER') then
    return old;
  end if;
  raise exception 'audit_events is append-only: % refused', tg_op using errcode = 'insufficient_privilege';
end $$;

create trigger audit_events_append_only_row
  before update or delete on audit_events
  for each row execute function audit_events_refuse_change();

create trigger audit_events_append_only_truncate
  before truncate on audit_events
  for each statement execute function audit_events_refuse_change();
