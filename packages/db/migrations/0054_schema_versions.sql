-- A server or the console started on its own must know whether the schema is as new as its code before
-- it serves, yet its login holds no privilege on bulkhead_migrations (and must never migrate). This
-- answers the versions applied and nothing else. Which migrations ran is no secret from any login: the
-- catalog, which every role reads, shows the objects they made; so PUBLIC keeps EXECUTE, and a login that
-- `db roles` has not reached yet can still be told that the schema is behind. A caller that keeps the
-- answer in an open transaction holds an ACCESS SHARE lock on the table, which the migration's EXCLUSIVE
-- lock admits: it stalls no migration.
create or replace function public.bulkhead_schema_versions() returns integer[]
language sql stable security definer
set search_path = pg_catalog, public, pg_temp as $$
  select coalesce(array_agg(m.version order by m.version), '{}') from public.bulkhead_migrations m
$$;
