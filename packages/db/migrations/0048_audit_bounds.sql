-- Audit rows bounded in the database, and logins that cannot reconfigure themselves (issue 42, items 6
-- and 8).
--
-- 1. Bounds. The writer (packages/audit/src/normalise.ts) cuts every field of an event to a limit, but
--    nothing in the database did: any login could insert an event with a 268 MB field, which made the
--    sealer's jsonb_build_object fail on every round from then on (nothing later was sealed), and being
--    append-only such a row can never be removed. Each text column is now bounded by the writer's limit
--    in characters (FIELD_LIMITS), each jsonb column by the bytes of its text form (MAX_JSON_BYTES), and
--    the row by the sum of them (MAX_ROW_BYTES). NOT VALID: rows written before stay as they are (the
--    sealer seals an oversized one by a digest of its stored bytes, body format 2 below); every new row
--    is checked, the owner's too.
alter table public.audit_events
  add constraint audit_events_server_bounded check (char_length(server) <= 40) not valid,
  add constraint audit_events_method_bounded check (char_length(method) <= 100) not valid,
  add constraint audit_events_tool_bounded check (char_length(tool) <= 200) not valid,
  add constraint audit_events_client_name_bounded check (char_length(client_name) <= 200) not valid,
  add constraint audit_events_client_version_bounded check (char_length(client_version) <= 100) not valid,
  add constraint audit_events_request_id_bounded check (char_length(request_id) <= 200) not valid,
  add constraint audit_events_token_id_bounded check (char_length(token_id) <= 64) not valid,
  add constraint audit_events_token_label_bounded check (char_length(token_label) <= 200) not valid,
  add constraint audit_events_approval_id_bounded check (char_length(approval_id) <= 64) not valid,
  add constraint audit_events_outcome_bounded check (char_length(outcome) <= 40) not valid,
  add constraint audit_events_arguments_bounded check (octet_length(arguments::text) <= 262144) not valid,
  add constraint audit_events_result_summary_bounded check (octet_length(result_summary::text) <= 262144) not valid,
  add constraint audit_events_row_bounded check (
    coalesce(octet_length(server), 0) + coalesce(octet_length(db_role::text), 0)
    + coalesce(octet_length(token_id), 0) + coalesce(octet_length(token_label), 0)
    + coalesce(octet_length(client_name), 0) + coalesce(octet_length(client_version), 0)
    + coalesce(octet_length(method), 0) + coalesce(octet_length(tool), 0) + coalesce(octet_length(outcome), 0)
    + coalesce(octet_length(request_id), 0) + coalesce(octet_length(approval_id), 0)
    + coalesce(octet_length(trace_id), 0)
    + coalesce(octet_length(arguments::text), 0) + coalesce(octet_length(result_summary::text), 0)
    <= 327680) not valid;

-- How the sealed body of each event in a seal was made: null (format 1) as before; 2 renders a text or
-- jsonb column whose text is larger than any new row may hold as {"sha256": …, "bytes": …} of its
-- stored text, so that no row can make the body unencodable. Every row a format-1 seal covered renders
-- the same in both formats (a row it could seal is a row that renders), so that only the rows that
-- stalled the sealer before differ. Covered by the seal's MAC when set.
alter table public.audit_seals add column body_format smallint check (body_format = 2);

-- 2. The seal horizon waits only for transactions that hold an event number. It waited for every
--    transaction with an id that held ROW EXCLUSIVE on audit_events — which any login that may insert
--    can take with LOCK TABLE and keep, making every seal round wait its full settle time. A number is
--    now taken only through bulkhead_audit_number(), which first locks audit_events_writers, a table no
--    deployable has any privilege on (so none can lock it: LOCK TABLE needs a privilege, and a refused
--    statement's lock is released with it); the sealer waits for the holders of that lock alone. (Not
--    the sequence's lock: `currval` takes it for the whole transaction even when refused.) A number a
--    login draws from the sequence itself is a gap: the stamping trigger numbers every event.
create table public.audit_events_writers ();
revoke all on public.audit_events_writers from public;

create function public.bulkhead_audit_number() returns bigint language plpgsql security definer
set search_path = pg_catalog, public, pg_temp as $$
begin
  -- The order the sealer's horizon rests on: transaction id, then the writers' lock, then the number.
  perform pg_catalog.pg_current_xact_id();
  lock table public.audit_events_writers in row exclusive mode;
  return pg_catalog.nextval('public.audit_events_seq'::pg_catalog.regclass);
end $$;
revoke all on function public.bulkhead_audit_number() from public;

-- As in 0038, with the number taken through bulkhead_audit_number().
create or replace function public.audit_events_stamp() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
declare
  me text;
  myself oid := to_regrole(quote_ident(current_user))::oid;
begin
  new.seq := public.bulkhead_audit_number();
  new.at := clock_timestamp();
  new.db_role := current_user;
  if not pg_has_role(myself,
      (select relowner from pg_catalog.pg_class where oid = 'public.bulkhead_migrations'::pg_catalog.regclass), 'MEMBER') then
    select case when count(*) = 1 then min(d.name) end into me
      from public.bulkhead_deployables d
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

-- 3. Logins cannot reconfigure themselves, as far as PostgreSQL allows. Any role may `ALTER ROLE
--    current_user SET …` (a setting applied to every connection it opens later) and change its own
--    password, and no release up to 18 can forbid it (event triggers do not fire for roles). So the
--    kit refuses a login that did: the settings stored for it must be exactly those its administrator
--    set (bulkhead_login_limits(), applied by `bulkhead db roles --login`), checked by the servers at
--    start and by the database on every statement that appends to the audit log — every call's
--    transaction — and by the sealer on every seal.
--
-- The settings an administrator stores for every login role: work_mem (which a session can still raise
-- for itself with SET; this bounds the servers' own sessions) and temp_file_limit (which only a
-- superuser may set, so no login can lift it).
create function public.bulkhead_login_limits() returns table (name text, setting text)
language sql immutable set search_path = pg_catalog, public, pg_temp as $$
  values ('temp_file_limit'::text, '256MB'::text), ('work_mem', '16MB')
$$;
revoke all on function public.bulkhead_login_limits() from public;

-- The settings stored for the session's login role in this database (or in every database) that are
-- not its administrator's limits; empty for the owner and superusers, whose settings are theirs to keep.
-- A definer function, so that a login needs no right on the limits; it names only the caller's own.
create function public.bulkhead_login_settings_changed() returns text[]
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select coalesce(array_agg(c order by c), '{}') from (
    select unnest(s.setconfig) as c from pg_catalog.pg_db_role_setting s
    where s.setrole = (select oid from pg_catalog.pg_roles where rolname = session_user)
      and s.setdatabase in (0, (select oid from pg_catalog.pg_database where datname = pg_catalog.current_database()))
      and not public.bulkhead_role_is_owner(session_user)) stored
  where c not in (select l.name || '=' || l.setting from public.bulkhead_login_limits() l)
$$;
revoke all on function public.bulkhead_login_settings_changed() from public;

create function public.audit_events_refuse_reconfigured_login() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
declare
  changed text[] := public.bulkhead_login_settings_changed();
begin
  if cardinality(changed) > 0 then
    raise exception 'login role % has reconfigured itself (ALTER ROLE … SET %): it is refused until an administrator runs ALTER ROLE % RESET ALL and `bulkhead db roles --login` again',
      session_user, array_to_string(changed, ', '), quote_ident(session_user)
      using errcode = 'insufficient_privilege';
  end if;
  return null;
end $$;
revoke all on function public.audit_events_refuse_reconfigured_login() from public;

create trigger audit_events_refuse_reconfigured_login
  before insert on public.audit_events
  for each statement execute function public.audit_events_refuse_reconfigured_login();
