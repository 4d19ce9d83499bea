-- Bounded servers in front of upstream MCP servers pin what the upstream said about each chosen tool
-- (pins.json, reviewed with the code). A server that finds the upstream's live definition differing
-- from its pin, or a tool it did not pin, records the drift here and withholds the tool; an operator
-- may accept a drifted definition for this deployment (after it is linted), and the server then serves
-- the accepted text. `bulkhead pins update` rewrites the pin file for review instead.
create table bulkhead_mcp_drift (
  server text not null,
  upstream text not null,
  tool text not null,
  sha256 text not null check (sha256 ~ '^[0-9a-f]{64}$'),
  kind text not null check (kind in ('changed', 'new')),
  pinned jsonb,
  live jsonb not null,
  findings jsonb not null default '[]',
  -- Why the definition cannot be accepted here (a finding of the linter's safety rules, a tool that
  -- stopped being read-only): null when it can.
  blocked text,
  seen_at timestamptz not null default now(),
  primary key (server, upstream, tool, sha256),
  check ((kind = 'new') = (pinned is null))
);

create table bulkhead_mcp_pin_acceptances (
  server text not null,
  upstream text not null,
  tool text not null,
  sha256 text not null,
  accepted_by text not null,
  accepted_at timestamptz not null default now(),
  primary key (server, upstream, tool, sha256),
  foreign key (server, upstream, tool, sha256) references bulkhead_mcp_drift on delete cascade
);

-- An acceptance is announced with the server's name: each replica of that server serves it at once.
create function bulkhead_mcp_pins_notify() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
begin
  perform pg_notify('bulkhead_mcp_pins', coalesce(new.server, old.server));
  return null;
end $$;

create trigger bulkhead_mcp_pin_acceptances_changed
  after insert or update or delete on bulkhead_mcp_pin_acceptances
  for each row execute function bulkhead_mcp_pins_notify();

-- The server a caller may act for: its own (a deployable role), or any it names (the owner).
create function bulkhead_mcp_pins_server(p_server text) returns text
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  caller name := public.bulkhead_caller();
  mine text := case when public.bulkhead_role_is_owner(caller) then p_server else public.bulkhead_deployable_of(caller) end;
begin
  if mine is null or mine is distinct from p_server then
    raise exception 'role % may read and record the pins only of its own server', caller
      using errcode = 'insufficient_privilege';
  end if;
  return mine;
end $$;
revoke all on function bulkhead_mcp_pins_server(text) from public;

-- A server records what it found (once per definition; seen again, only its time moves). True when new.
create function bulkhead_record_mcp_drift(
  p_server text, p_upstream text, p_tool text, p_sha256 text, p_kind text,
  p_pinned jsonb, p_live jsonb, p_findings jsonb, p_blocked text)
returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  inserted boolean;
begin
  perform public.bulkhead_mcp_pins_server(p_server);
  insert into public.bulkhead_mcp_drift as d (server, upstream, tool, sha256, kind, pinned, live, findings, blocked)
    values (p_server, p_upstream, p_tool, p_sha256, p_kind, p_pinned, p_live, p_findings, p_blocked)
    on conflict (server, upstream, tool, sha256) do update set seen_at = now()
    returning (xmax = 0) into inserted;
  return inserted;
end $$;
revoke all on function bulkhead_record_mcp_drift(text, text, text, text, text, jsonb, jsonb, jsonb, text) from public;

-- The drifted definitions accepted for a server, with the definition each stands for.
create function bulkhead_mcp_accepted(p_server text)
returns table (upstream text, tool text, sha256 text, live jsonb)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_mcp_pins_server(p_server);
  return query select a.upstream, a.tool, a.sha256, d.live
    from public.bulkhead_mcp_pin_acceptances a
    join public.bulkhead_mcp_drift d using (server, upstream, tool, sha256)
    where a.server = p_server order by a.upstream, a.tool, a.accepted_at;
end $$;
revoke all on function bulkhead_mcp_accepted(text) from public;

-- An operator (the console, with the operator's proof) reads every drift, accepted or not.
create function bulkhead_operator_mcp_drift(p_proof text)
returns table (server text, upstream text, tool text, sha256 text, kind text, pinned jsonb, live jsonb,
  findings jsonb, blocked text, seen_at timestamptz, accepted_by text, accepted_at timestamptz)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_proof(p_proof);
  return query select d.server, d.upstream, d.tool, d.sha256, d.kind, d.pinned, d.live, d.findings, d.blocked,
      d.seen_at, a.accepted_by, a.accepted_at
    from public.bulkhead_mcp_drift d
    left join public.bulkhead_mcp_pin_acceptances a using (server, upstream, tool, sha256)
    order by d.seen_at desc, d.server, d.upstream, d.tool;
end $$;
revoke all on function bulkhead_operator_mcp_drift(text) from public;

-- Accepts one drifted definition for this deployment, recorded as accepted by the operator's person
-- (or token label). A new tool is not accepted here (it is pinned by code review), nor a blocked one.
-- False when it was accepted already.
create function bulkhead_accept_mcp_drift(p_server text, p_upstream text, p_tool text, p_sha256 text, p_by text)
returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  d record;
begin
  select * into d from public.bulkhead_mcp_drift x
    where x.server = p_server and x.upstream = p_upstream and x.tool = p_tool and x.sha256 = p_sha256;
  if not found then
    raise exception 'no drift of % on % with that sha256', p_tool, p_server using errcode = 'no_data_found';
  end if;
  if d.kind = 'new' then
    raise exception '% is a new tool of %: pin it with bulkhead pins update and review it', p_tool, p_upstream
      using errcode = 'check_violation';
  end if;
  if d.blocked is not null then
    raise exception 'the new definition of % cannot be accepted: %', p_tool, d.blocked using errcode = 'check_violation';
  end if;
  insert into public.bulkhead_mcp_pin_acceptances (server, upstream, tool, sha256, accepted_by)
    values (p_server, p_upstream, p_tool, p_sha256, p_by) on conflict do nothing;
  return found;
end $$;
revoke all on function bulkhead_accept_mcp_drift(text, text, text, text, text) from public;

create function bulkhead_operator_accept_mcp_drift(p_proof text, p_server text, p_upstream text, p_tool text, p_sha256 text)
returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  op record;
begin
  select * into op from public.bulkhead_operator_proof(p_proof);
  return public.bulkhead_accept_mcp_drift(p_server, p_upstream, p_tool, p_sha256, coalesce(op.owner, op.label));
end $$;
revoke all on function bulkhead_operator_accept_mcp_drift(text, text, text, text, text) from public;
