-- The check that a login has not reconfigured itself (0048) runs on every statement that appends to
-- the audit log, that is on every call. As an SQL function it was planned again on each run, and it
-- asked whether the session's role owns the schema before it knew whether anything was stored: about
-- a millisecond of the database's time per call, the most of what the audit log cost (`pnpm bench`,
-- audit on / off). The same check in PL/pgSQL keeps its plan for the session, and asks about the owner
-- only when a setting other than the administrator's limits is stored. What it answers is unchanged.
create or replace function public.bulkhead_login_settings_changed() returns text[]
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  changed text[];
begin
  select coalesce(array_agg(c order by c), '{}') into changed from (
    select unnest(s.setconfig) as c from pg_catalog.pg_db_role_setting s
    where s.setrole = (select oid from pg_catalog.pg_roles where rolname = session_user)
      and s.setdatabase in (0, (select oid from pg_catalog.pg_database where datname = pg_catalog.current_database()))) stored
  where c not in (select l.name || '=' || l.setting from public.bulkhead_login_limits() l);
  if cardinality(changed) = 0 or public.bulkhead_role_is_owner(session_user) then
    return '{}';
  end if;
  return changed;
end $$;
revoke all on function public.bulkhead_login_settings_changed() from public;
