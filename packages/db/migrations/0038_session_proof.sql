-- The database trusts nothing a session can change (issue 31). A session can create temporary tables,
-- views and sequences, and PostgreSQL looks in the session's temporary schema *first* for a table,
-- view or sequence unless `pg_temp` is listed in the search path, even before pg_catalog. Every
-- function and trigger function of the kit was declared `set search_path = public, pg_catalog`: a temp
-- view named like a table the function reads ran the caller's code with the definer's rights, and a
-- temp `bulkhead_migrations` or `audit_events_seq` changed what `regclass` and `nextval` resolved to.
--
-- From here on every function names its path as `pg_catalog, public, pg_temp` — pg_temp explicitly
-- last, so that it is searched after everything real — and names the relations it resolves from text
-- (`regclass` literals, `nextval`) with their schema. `bulkhead db roles` also revokes TEMP on the
-- database and CREATE on the schema from PUBLIC, so the deployables' roles cannot make such objects at
-- all; a test generated from the catalog keeps both true for every function added later.

create or replace function audit_events_refuse_change() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
begin
  -- Only the table's owner (who could drop this trigger anyway) may prune, and only when it says so.
  if tg_op = 'DELETE' and current_setting('bulkhead.audit_prune', true) = 'on'
     and pg_has_role(current_user, (select relowner from pg_catalog.pg_class where oid = tg_relid), 'MEMBER') then
    return old;
  end if;
  raise exception '% is append-only: % refused', tg_table_name, tg_op using errcode = 'insufficient_privilege';
end $$;

-- True for the schema's owner and superusers, by role oid: the owner is whoever owns
-- public.bulkhead_migrations, named with its schema so that no temporary table can stand in for it.
create or replace function bulkhead_role_is_owner(r name) returns boolean language sql stable
set search_path = pg_catalog, public, pg_temp as $$
  select coalesce(pg_has_role(to_regrole(quote_ident(r))::oid,
    (select relowner from pg_catalog.pg_class where oid = 'public.bulkhead_migrations'::pg_catalog.regclass), 'MEMBER'), false)
$$;

create or replace function bulkhead_deployable_of(r name) returns text language sql stable
set search_path = pg_catalog, public, pg_temp as $$
  select case when to_regrole(quote_ident(r)) is null or public.bulkhead_role_is_owner(r) then null else (
    select case when count(*) = 1 then min(d.name) end
    from public.bulkhead_deployables d
    where pg_has_role(to_regrole(quote_ident(r))::oid, to_regrole(quote_ident(d.role))::oid, 'MEMBER')) end
$$;

create or replace function bulkhead_current_deployable() returns text language sql stable
set search_path = pg_catalog, public, pg_temp as $$ select public.bulkhead_deployable_of(current_user) $$;

create or replace function bulkhead_caller() returns name language sql stable
set search_path = pg_catalog, public, pg_temp as $$
  select coalesce(nullif(current_setting('role'), 'none'), session_user)::name
$$;

-- Stamps what no writer may choose (see 0012). The sequence is named with its schema: a temporary
-- sequence of the same name once let a role draw future numbers and block everyone's inserts.
create or replace function audit_events_stamp() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
declare
  me text;
  myself oid := to_regrole(quote_ident(current_user))::oid;
begin
  perform pg_current_xact_id();
  new.seq := nextval('public.audit_events_seq'::pg_catalog.regclass);
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

create or replace function bulkhead_approvals_notify() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
begin
  perform pg_notify('bulkhead_approvals', new.server);
  return null;
end $$;

create or replace function bulkhead_outbox_notify() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
begin
  perform pg_notify('bulkhead_outbox', new.server);
  return null;
end $$;

create or replace function bulkhead_tokens_notify() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
begin
  perform pg_notify('bulkhead_tokens', new.id);
  return null;
end $$;

create or replace function bulkhead_outbox_guard() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
begin
  if not public.bulkhead_role_is_owner(current_user) and new.server is distinct from public.bulkhead_current_deployable() then
    raise exception '% may queue deliveries only for itself', current_user using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;

create or replace function bulkhead_verify_token(p_id text, p_secret_hash bytea, p_audience text, p_kind text)
returns table (status text, token_id text, label text, server text, kind text, owner text, scopes text[],
  customer_id text, expires_at timestamptz)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  caller name := public.bulkhead_caller();
  audience text := case when public.bulkhead_role_is_owner(caller) then p_audience else public.bulkhead_deployable_of(caller) end;
  t public.bulkhead_tokens;
begin
  if audience is null or audience is distinct from p_audience then
    raise exception 'role % may check tokens only for its own server', caller using errcode = 'insufficient_privilege';
  end if;
  select * into t from public.bulkhead_tokens where id = p_id;
  if not found or t.secret_hash <> p_secret_hash then
    return query select 'unknown'::text, null::text, null::text, null::text, null::text, null::text, null::text[],
      null::text, null::timestamptz;
    return;
  end if;
  if t.server <> audience or t.kind <> p_kind then
    return query select 'wrong_server'::text, t.id, t.label, null::text, null::text, null::text, null::text[],
      null::text, null::timestamptz;
    return;
  end if;
  if t.revoked_at is not null or (t.expires_at is not null and t.expires_at <= now()) then
    return query select case when t.revoked_at is not null then 'revoked' else 'expired' end, t.id, t.label,
      null::text, null::text, null::text, null::text[], null::text, null::timestamptz;
    return;
  end if;
  update public.bulkhead_tokens set last_used_at = now()
    where id = t.id and (last_used_at is null or last_used_at < now() - interval '1 minute');
  return query select 'ok'::text, t.id, t.label, t.server, t.kind, t.owner, t.scopes, t.customer_id, t.expires_at;
end $$;

create or replace function bulkhead_token_owner(p_id text) returns text language sql stable security definer
set search_path = pg_catalog, public, pg_temp as $$ select owner from public.bulkhead_tokens where id = p_id $$;

create or replace function bulkhead_approver(p_id text) returns table (token_id text, label text, owner text)
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select id, label, owner from public.bulkhead_tokens
  where id = p_id and kind = 'approver' and server = 'console' and revoked_at is null
    and (expires_at is null or expires_at > now())
$$;

create or replace function bulkhead_audit_backlog() returns table (unsealed bigint, oldest_at timestamptz)
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select count(*), min(at) from public.audit_events
  where seq > coalesce((select max(last_seq) from public.audit_seals), (select last_seq from public.audit_prune_checkpoint), 0)
$$;

create or replace function bulkhead_oauth_token_revoked() returns trigger language plpgsql
security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  update public.bulkhead_oauth_grants set revoked_at = now(), revoked_reason = coalesce(revoked_reason, 'token_revoked')
    where id = new.grant_id and revoked_at is null;
  return null;
end $$;

create or replace function bulkhead_oauth_grant_revoked() returns trigger language plpgsql
security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  update public.bulkhead_tokens set revoked_at = now() where grant_id = new.id and revoked_at is null;
  return null;
end $$;

create or replace function bulkhead_approver_can_grant(p_id text) returns boolean
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select coalesce((select 'grants:issue' = any (scopes) from public.bulkhead_tokens
    where id = p_id and kind = 'approver' and server = 'console' and revoked_at is null
      and (expires_at is null or expires_at > now())), false)
$$;

create or replace function bulkhead_oauth_issue_token(p_grant_id text, p_id text, p_secret_hash bytea, p_label text,
  p_expires_at timestamptz)
returns table (token_id text, server text, scopes text[], customer_id text, expires_at timestamptz)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  g public.bulkhead_oauth_grants;
begin
  select * into g from public.bulkhead_oauth_grants where id = p_grant_id for update;
  if not found or g.revoked_at is not null then
    raise exception 'grant % is unknown or revoked', p_grant_id using errcode = 'check_violation';
  end if;
  if not public.bulkhead_approver_can_grant(g.granted_by_token_id) then
    raise exception 'grant % was given by a token that may not grant', p_grant_id using errcode = 'check_violation';
  end if;
  if not exists (select 1 from public.bulkhead_deployables d where d.name = g.server and d.kind = 'mcp') then
    raise exception 'grant % is for %, not an MCP server', p_grant_id, g.server using errcode = 'check_violation';
  end if;
  if p_expires_at <= now() or p_expires_at > now() + interval '1 day' then
    raise exception 'an OAuth access token lives for up to a day' using errcode = 'check_violation';
  end if;
  insert into public.bulkhead_tokens (id, kind, server, label, scopes, customer_id, secret_hash, created_by, expires_at,
    owner, grant_id)
  values (p_id, 'mcp', g.server, left(p_label, 200), g.scopes, g.customer_id, p_secret_hash,
    'oauth:' || g.granted_by, p_expires_at, g.owner, g.id);
  return query select p_id, g.server, g.scopes, g.customer_id, p_expires_at;
end $$;

create or replace function bulkhead_oauth_revoke_grant(p_grant_id text, p_reason text) returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  update public.bulkhead_oauth_grants set revoked_at = now(), revoked_reason = left(p_reason, 100)
    where id = p_grant_id and revoked_at is null;
  return found;
end $$;

create or replace function bulkhead_oauth_token_grant(p_id text, p_secret_hash bytea) returns text
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select grant_id from public.bulkhead_tokens where id = p_id and secret_hash = p_secret_hash and grant_id is not null
$$;

-- Rate-limit counts, exchanged through this function alone: the servers' roles no longer hold any
-- privilege on the table, so none can lock it (`LOCK … IN ACCESS EXCLUSIVE MODE` needs one) or touch
-- another server's counts. Adds the caller's new counts (rows of its own server, as the database
-- knows it), reads back the totals of the tokens it asks for since `p_since`, and with `p_cleanup`
-- drops windows older than ten minutes.
create function bulkhead_rate_limit_exchange(p_tokens text[], p_starts float8[], p_counts integer[], p_read text[],
  p_since timestamptz, p_cleanup boolean)
returns table (token_id text, window_start_ms float8, count integer)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
#variable_conflict use_column
declare
  caller name := public.bulkhead_caller();
  me text := coalesce(public.bulkhead_deployable_of(caller), case when public.bulkhead_role_is_owner(caller) then '' end);
begin
  if me is null then
    raise exception 'role % serves no deployable', caller using errcode = 'insufficient_privilege';
  end if;
  if cardinality(p_tokens) > 0 then
    insert into public.bulkhead_rate_limits as r (server, token_id, window_start, count)
    select me, x.t, to_timestamp(x.s / 1000.0), x.n from unnest(p_tokens, p_starts, p_counts) as x(t, s, n)
    on conflict on constraint bulkhead_rate_limits_pkey do update set count = r.count + excluded.count;
  end if;
  if p_cleanup then
    delete from public.bulkhead_rate_limits r where r.server = me and r.window_start < now() - interval '10 minutes';
  end if;
  return query select r.token_id, (extract(epoch from r.window_start) * 1000)::float8, r.count
    from public.bulkhead_rate_limits r
    where r.server = me and r.token_id = any (p_read) and r.window_start >= p_since;
end $$;
revoke all on function bulkhead_rate_limit_exchange(text[], float8[], integer[], text[], timestamptz, boolean) from public;

-- Whether two names denote the same person (separation of duties): compared trimmed, in Unicode
-- normal form NFKC and lower case, so that `Bob`, `bob ` and a full-width `ｂｏｂ` are one person.
create function bulkhead_same_person(a text, b text) returns boolean language sql immutable
set search_path = pg_catalog, public, pg_temp as $$
  select case when getdatabaseencoding() = 'UTF8'
    then lower(normalize(btrim(a), nfkc)) = lower(normalize(btrim(b), nfkc))
    else lower(btrim(a)) = lower(btrim(b)) end
$$;

-- A decision names its audit event, written first in the same transaction (see the guard below).
alter table bulkhead_approvals add column decision_event_id uuid;

-- Approvals (0011, 0036), with a decision that must name a real, live approver who is not the
-- requester, and that is recorded in the audit log in the same transaction: the console's role could
-- once write `decided_by = 'nobody'` and any token id, with no event, and the action ran.
create or replace function bulkhead_approvals_guard() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
declare
  me text;
  approver record;
  requester_owner text;
begin
  if public.bulkhead_role_is_owner(current_user) then return new; end if;
  me := public.bulkhead_current_deployable();
  if me is null then
    raise exception 'role % serves no deployable', current_user using errcode = 'insufficient_privilege';
  end if;
  if tg_op = 'INSERT' then
    if new.server is distinct from me then
      raise exception '% may file approvals only for itself, not for %', me, new.server using errcode = 'insufficient_privilege';
    end if;
    if new.status <> 'pending' or new.decided_at is not null or new.decided_by is not null
       or new.decided_by_token_id is not null or new.decided_arguments_hash is not null
       or new.decision_event_id is not null
       or new.executed_at is not null or new.result is not null or new.failure is not null
       or new.withdrawn_at is not null then
      raise exception 'a new approval request is pending and undecided' using errcode = 'insufficient_privilege';
    end if;
    return new;
  end if;
  if old.status in ('rejected', 'expired', 'executed', 'failed', 'withdrawn') then
    raise exception 'approval % is final (%)', old.id, old.status using errcode = 'insufficient_privilege';
  end if;
  if new.as_task is distinct from old.as_task then
    raise exception 'whether approval % is a task was fixed when it was requested', old.id using errcode = 'insufficient_privilege';
  end if;
  if old.status = 'pending' and new.status in ('approved', 'rejected') then
    if me <> 'console' then
      raise exception 'only the console role decides approvals, not %', me using errcode = 'insufficient_privilege';
    end if;
    if new.decided_by_token_id is null or new.decided_by is null then
      raise exception 'a decision names its approver token' using errcode = 'check_violation';
    end if;
    select a.token_id, a.label, a.owner into approver from public.bulkhead_approver(new.decided_by_token_id) a;
    if not found then
      raise exception 'a decision names a live approver token; % is none', new.decided_by_token_id
        using errcode = 'check_violation';
    end if;
    if new.decided_by not in ('console:' || approver.label, 'cli:' || approver.label) then
      raise exception 'the decider is recorded as its approver token''s label (console:% or cli:%), not %',
        approver.label, approver.label, new.decided_by using errcode = 'check_violation';
    end if;
    if new.decided_by_token_id is not distinct from old.requested_by_token_id then
      raise exception 'approval % cannot be decided with the token that requested it', old.id using errcode = 'check_violation';
    end if;
    if new.status = 'approved' and coalesce(current_setting('bulkhead.allow_self_approval', true), '') <> 'on' then
      requester_owner := public.bulkhead_token_owner(old.requested_by_token_id);
      if approver.owner is not null and requester_owner is not null
         and public.bulkhead_same_person(approver.owner, requester_owner) then
        raise exception 'approval % was requested by %, who may not approve it too', old.id, requester_owner
          using errcode = 'check_violation';
      end if;
    end if;
    if new.status = 'approved' and new.decided_arguments_hash is distinct from old.arguments_hash then
      raise exception 'the approved arguments hash differs from the stored one' using errcode = 'check_violation';
    end if;
    if old.expires_at <= now() then
      raise exception 'approval % has expired', old.id using errcode = 'check_violation';
    end if;
    if not exists (select 1 from public.audit_events e
        where e.id = new.decision_event_id and e.approval_id = old.id and e.method = 'approvals/decide'
          and e.outcome = new.status and e.token_id = new.decided_by_token_id
          and e.xmin = pg_current_xact_id()::xid) then
      raise exception 'a decision on % is recorded with its audit event, written first in the same transaction', old.id
        using errcode = 'check_violation';
    end if;
    new.decided_at := now();
    return new;
  end if;
  if new.decision_event_id is distinct from old.decision_event_id then
    raise exception 'the decision event of % is set with its decision', old.id using errcode = 'insufficient_privilege';
  end if;
  if old.status = 'pending' and new.status = 'withdrawn' then
    -- The requester withdraws through the server that filed the request; nobody else may.
    if me <> old.server then
      raise exception 'only % withdraws its approval requests, not %', old.server, me using errcode = 'insufficient_privilege';
    end if;
    if old.expires_at <= now() then
      raise exception 'approval % has expired', old.id using errcode = 'check_violation';
    end if;
    new.withdrawn_at := now();
    return new;
  end if;
  if old.status = 'pending' and new.status = 'expired' then
    if old.expires_at > now() then
      raise exception 'approval % has not expired yet', old.id using errcode = 'check_violation';
    end if;
    return new;
  end if;
  if old.status = 'approved' and new.status in ('executed', 'failed') then
    if me <> old.server then
      raise exception 'only % records the outcome of its approvals', old.server using errcode = 'insufficient_privilege';
    end if;
    return new;
  end if;
  raise exception 'approval % cannot go from % to %', old.id, old.status, new.status using errcode = 'insufficient_privilege';
end $$;
