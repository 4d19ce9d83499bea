-- Which deployable a role serves is asked for every audit event, and for every row a row policy
-- checks. The first versions looked it up through the pg_roles view inside SQL functions with their
-- own search_path, re-planned on every call: about 1 ms per audit event, which capped a server's
-- audit path near 1,000 events/s. The same answers, from the role catalog's caches by oid.

create or replace function bulkhead_role_is_owner(r name) returns boolean language sql stable
set search_path = public, pg_catalog as $$
  select coalesce(pg_has_role(to_regrole(quote_ident(r))::oid,
    (select relowner from pg_class where oid = 'bulkhead_migrations'::regclass), 'MEMBER'), false)
$$;

create or replace function bulkhead_deployable_of(r name) returns text language sql stable
set search_path = public, pg_catalog as $$
  select case when to_regrole(quote_ident(r)) is null or bulkhead_role_is_owner(r) then null else (
    select case when count(*) = 1 then min(d.name) end
    from bulkhead_deployables d
    where pg_has_role(to_regrole(quote_ident(r))::oid, to_regrole(quote_ident(d.role))::oid, 'MEMBER')) end
$$;

-- The stamp does the same lookups in its own statements, whose plans PL/pgSQL keeps.
create or replace function audit_events_stamp() returns trigger language plpgsql
set search_path = public, pg_catalog as $$
declare
  me text;
  myself oid := to_regrole(quote_ident(current_user))::oid;
begin
  perform pg_current_xact_id();
  new.seq := nextval('audit_events_seq');
  new.at := clock_timestamp();
  new.db_role := current_user;
  if not pg_has_role(myself, (select relowner from pg_class where oid = 'bulkhead_migrations'::regclass), 'MEMBER') then
    select case when count(*) = 1 then min(d.name) end into me
      from bulkhead_deployables d
      where pg_has_role(myself, to_regrole(quote_ident(d.role))::oid, 'MEMBER');
    if me is null then
      raise exception 'role % serves no deployable and may not write audit events', current_user
        using errcode = 'insufficient_privilege';
    end if;
    new.server := me;
  end if;
  -- A decision is recorded by the console alone (a refused `approvals/decide` request to a server is
  -- recorded by that server, as what it is: a bad request).
  if new.method = 'approvals/decide' and new.outcome in ('approved', 'rejected') and new.server <> 'console' then
    raise exception 'only the console records decisions' using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;
