-- A tool switch for incidents: an operator switches one tool of one server off (and on again) with a
-- reason. A switched-off tool is left out of its server's tools/list and refused like an unknown tool.
-- A row is a tool that is off; switching it on deletes the row (the audit log keeps the history).
create table bulkhead_tool_switches (
  server text not null,
  tool text not null,
  reason text not null check (length(btrim(reason)) between 1 and 500),
  switched_by text not null,
  switched_at timestamptz not null default now(),
  primary key (server, tool)
);

-- Every change is announced with the server's name: each replica of that server re-reads its set.
create function bulkhead_tool_switches_notify() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
begin
  perform pg_notify('bulkhead_tool_switches', coalesce(new.server, old.server));
  return null;
end $$;

create trigger bulkhead_tool_switches_changed
  after insert or update or delete on bulkhead_tool_switches
  for each row execute function bulkhead_tool_switches_notify();

-- No server role reads the table. A server asks here, and this answers only for the calling role's
-- own server (the owner names the server it asks for). Only the owner writes (the CLI).
create function bulkhead_switched_off_tools(p_server text)
returns table (tool text, reason text, switched_by text, switched_at timestamptz)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  caller name := public.bulkhead_caller();
  mine text := case when public.bulkhead_role_is_owner(caller) then p_server else public.bulkhead_deployable_of(caller) end;
begin
  if mine is null or mine is distinct from p_server then
    raise exception 'role % may read the tool switches only of its own server', caller
      using errcode = 'insufficient_privilege';
  end if;
  return query select s.tool, s.reason, s.switched_by, s.switched_at
    from public.bulkhead_tool_switches s where s.server = p_server order by s.tool;
end $$;

revoke all on function bulkhead_switched_off_tools(text) from public;
