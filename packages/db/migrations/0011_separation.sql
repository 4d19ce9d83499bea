-- Separation in the data. Each deployable runs under its own group role (created, with its grants and
-- row-level policies, by `bulkhead db roles`); the database itself refuses what a role's server must
-- not do, whatever the application code does.

-- Which group role each deployable runs under. Written by `bulkhead db roles`; anyone may read it.
create table bulkhead_deployables (
  name text primary key check (name ~ '^[a-z][a-z0-9-]{0,39}$'),
  role name not null unique,
  kind text not null check (kind in ('mcp', 'console', 'sealer'))
);
grant select on bulkhead_deployables to public;

-- True for the schema's owner and superusers: they can do anything anyway (drop a trigger, disable a
-- policy); every check below binds everyone else.
create function bulkhead_role_is_owner(r name) returns boolean language sql stable
set search_path = public, pg_catalog as $$
  select case when exists (select 1 from pg_roles where rolname = r)
    then pg_has_role(r, (select relowner from pg_class where oid = 'bulkhead_migrations'::regclass), 'MEMBER')
    else false end
$$;

-- The deployable a role serves: the one deployable whose group role it belongs to; null for the owner,
-- for a role of no deployable and for a role of several (an ambiguous role serves none).
create function bulkhead_deployable_of(r name) returns text language sql stable
set search_path = public, pg_catalog as $$
  select case when bulkhead_role_is_owner(r) or not exists (select 1 from pg_roles where rolname = r) then null else (
    select case when count(*) = 1 then min(d.name) end
    from bulkhead_deployables d join pg_roles g on g.rolname = d.role
    where pg_has_role(r, g.oid, 'MEMBER')) end
$$;

create function bulkhead_current_deployable() returns text language sql stable
set search_path = public, pg_catalog as $$ select bulkhead_deployable_of(current_user) $$;

-- Inside a SECURITY DEFINER function current_user is the definer; the caller is the session's role
-- (SET ROLE, which only a member may set) or else the session user.
create function bulkhead_caller() returns name language sql stable as $$
  select coalesce(nullif(current_setting('role'), 'none'), session_user)::name
$$;

-- Tokens: the person a token was issued to (separation of duties), and a notification on every change
-- that matters to a verifier's cache.
alter table bulkhead_tokens add column owner text;

create function bulkhead_tokens_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('bulkhead_tokens', new.id);
  return null;
end $$;

create trigger bulkhead_tokens_changed
  after update of revoked_at, expires_at, scopes, customer_id, label, owner, server, kind on bulkhead_tokens
  for each row execute function bulkhead_tokens_notify();

-- No server role reads bulkhead_tokens. A presented token is checked here, and this answers only for
-- tokens whose audience is the calling role's own server (the owner names the audience it asks for).
-- The last use is noted at most once a minute.
create function bulkhead_verify_token(p_id text, p_secret_hash bytea, p_audience text, p_kind text)
returns table (status text, token_id text, label text, server text, kind text, owner text, scopes text[],
  customer_id text, expires_at timestamptz)
language plpgsql security definer set search_path = public, pg_catalog as $$
declare
  caller name := bulkhead_caller();
  audience text := case when bulkhead_role_is_owner(caller) then p_audience else bulkhead_deployable_of(caller) end;
  t bulkhead_tokens;
begin
  if audience is null or audience is distinct from p_audience then
    raise exception 'role % may check tokens only for its own server', caller using errcode = 'insufficient_privilege';
  end if;
  select * into t from bulkhead_tokens where id = p_id;
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
  update bulkhead_tokens set last_used_at = now()
    where id = t.id and (last_used_at is null or last_used_at < now() - interval '1 minute');
  return query select 'ok'::text, t.id, t.label, t.server, t.kind, t.owner, t.scopes, t.customer_id, t.expires_at;
end $$;
revoke all on function bulkhead_verify_token(text, bytea, text, text) from public;

-- The person behind a token (for separation of duties at decision time); granted to the console only.
create function bulkhead_token_owner(p_id text) returns text language sql stable security definer
set search_path = public, pg_catalog as $$ select owner from bulkhead_tokens where id = p_id $$;
revoke all on function bulkhead_token_owner(text) from public;

-- An approver token still valid (a console session lives only as long as its token); console only.
create function bulkhead_approver(p_id text) returns table (token_id text, label text, owner text)
language sql stable security definer set search_path = public, pg_catalog as $$
  select id, label, owner from bulkhead_tokens
  where id = p_id and kind = 'approver' and server = 'console' and revoked_at is null
    and (expires_at is null or expires_at > now())
$$;
revoke all on function bulkhead_approver(text) from public;

-- Approvals: only the console role decides, only the owning server records the outcome, and only after
-- a decision exists. The decider states the arguments hash they approved; the executor runs nothing else.
drop trigger bulkhead_approvals_runnable on bulkhead_approvals;
alter table bulkhead_approvals drop column audited_status;
alter table bulkhead_approvals add column decided_arguments_hash text
  check (decided_arguments_hash ~ '^[0-9a-f]{64}$');

create trigger bulkhead_approvals_runnable
  after update of status on bulkhead_approvals
  for each row when (new.status = 'approved' and old.status = 'pending')
  execute function bulkhead_approvals_notify();

create function bulkhead_approvals_guard() returns trigger language plpgsql
set search_path = public, pg_catalog as $$
declare
  me text;
begin
  if bulkhead_role_is_owner(current_user) then return new; end if;
  me := bulkhead_current_deployable();
  if me is null then
    raise exception 'role % serves no deployable', current_user using errcode = 'insufficient_privilege';
  end if;
  if tg_op = 'INSERT' then
    if new.server is distinct from me then
      raise exception '% may file approvals only for itself, not for %', me, new.server using errcode = 'insufficient_privilege';
    end if;
    if new.status <> 'pending' or new.decided_at is not null or new.decided_by is not null
       or new.decided_by_token_id is not null or new.decided_arguments_hash is not null
       or new.executed_at is not null or new.result is not null or new.failure is not null then
      raise exception 'a new approval request is pending and undecided' using errcode = 'insufficient_privilege';
    end if;
    return new;
  end if;
  if old.status in ('rejected', 'expired', 'executed', 'failed') then
    raise exception 'approval % is final (%)', old.id, old.status using errcode = 'insufficient_privilege';
  end if;
  if old.status = 'pending' and new.status in ('approved', 'rejected') then
    if me <> 'console' then
      raise exception 'only the console role decides approvals, not %', me using errcode = 'insufficient_privilege';
    end if;
    if new.decided_by_token_id is null or new.decided_by is null then
      raise exception 'a decision names its approver token' using errcode = 'check_violation';
    end if;
    if new.status = 'approved' and new.decided_arguments_hash is distinct from old.arguments_hash then
      raise exception 'the approved arguments hash differs from the stored one' using errcode = 'check_violation';
    end if;
    if old.expires_at <= now() then
      raise exception 'approval % has expired', old.id using errcode = 'check_violation';
    end if;
    new.decided_at := now();
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

create trigger bulkhead_approvals_guard
  before insert or update on bulkhead_approvals
  for each row execute function bulkhead_approvals_guard();

-- Outbox rows belong to the server that queued them.
create function bulkhead_outbox_guard() returns trigger language plpgsql
set search_path = public, pg_catalog as $$
begin
  if not bulkhead_role_is_owner(current_user) and new.server is distinct from bulkhead_current_deployable() then
    raise exception '% may queue deliveries only for itself', current_user using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;

create trigger bulkhead_outbox_guard
  before insert on bulkhead_outbox
  for each row execute function bulkhead_outbox_guard();

-- Rows are fenced by row-level security; the policies are created per role by `bulkhead db roles`.
-- The owner bypasses them.
alter table customers enable row level security;
alter table invoices enable row level security;
alter table invoice_lines enable row level security;
alter table payments enable row level security;
alter table credit_notes enable row level security;
alter table tickets enable row level security;
alter table ticket_messages enable row level security;
alter table bulkhead_approvals enable row level security;
alter table bulkhead_outbox enable row level security;
alter table bulkhead_outbox_attempts enable row level security;
-- The view reads with the caller's rights, so the policies above hold through it.
alter view invoice_balances set (security_invoker = true);

-- Replaced by `bulkhead db roles`, which grants each deployable exactly what it needs.
drop function bulkhead_grant_server_role(text);
