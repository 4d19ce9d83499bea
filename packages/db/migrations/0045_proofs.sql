-- The database trusts proofs, not claims (issue 42, items 1 and 3). The definer functions that acted for
-- an approver or operator took a token id, which the console's login could read (the sessions table,
-- decision events) or simply name: with plain SQL it minted tokens, read the whole audit log through a
-- setting, switched tools off and approved in the name of an approver who never signed in. And the
-- approvals guard let a setting the session chose (`bulkhead.allow_self_approval`) switch separation of
-- duties off.
--
-- From here on the database acts for an approver only on a secret whose hash it stores and computes
-- itself (built-in sha256): an approver token (`bh_console_<id>_<secret>`, its secret hashed as the kit
-- hashes it) or a console session's cookie value, whose session only `bulkhead_console_sign_in` opens,
-- with the approver token's secret. Id, label, person and rights are derived from the proof; expiry and
-- revocation of the session and the token are checked on every use. A compromised console login can act
-- for people only while they are signed in (it sees their cookies), never for anyone by id.

-- Trust switches live in a table only the owner writes (`bulkhead start` and the CLI, from
-- BULKHEAD_ALLOW_SELF_APPROVAL), never in a session's settings.
create table bulkhead_settings (
  name text primary key check (name in ('allow_self_approval')),
  value text not null check (value in ('on', 'off')),
  updated_at timestamptz not null default now()
);

-- Proofs presented in open transactions: one row per transaction (by its 64-bit id, never reused), only
-- written by `bulkhead_console_prove`. The approvals guard and the audit log's row policy read the row of
-- the current transaction: the database's own state, which no login can set. `self_approval` is the
-- owner's switch at the time of the proof; the owner (the CLI) may set it for its own transaction.
create table bulkhead_console_proofs (
  xact xid8 primary key,
  token_id text not null,
  label text not null,
  owner text,
  operator boolean not null,
  self_approval boolean not null,
  at timestamptz not null default now()
);

-- The approver a secret proves: an approver token in full, or a console session's cookie value. No row
-- for anything else (unknown, wrong secret, expired or revoked token or session, an MCP token).
create function bulkhead_console_proof(p_proof text)
returns table (token_id text, label text, owner text, scopes text[])
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  m text[];
begin
  if p_proof is null or length(p_proof) > 200 then return; end if;
  m := regexp_match(p_proof, '^bh_console_([a-z2-9]{12})_([A-Za-z0-9_-]{43})$');
  if m is not null then
    return query select t.id, t.label, t.owner, t.scopes from public.bulkhead_tokens t
      where t.id = m[1] and t.secret_hash = sha256(convert_to(m[2], 'UTF8'))
        and t.kind = 'approver' and t.server = 'console' and t.revoked_at is null
        and (t.expires_at is null or t.expires_at > now());
    return;
  end if;
  return query select t.id, t.label, t.owner, t.scopes
    from public.bulkhead_console_sessions s join public.bulkhead_tokens t on t.id = s.token_id
    where s.id_hash = sha256(convert_to(p_proof, 'UTF8')) and s.expires_at > now()
      and t.kind = 'approver' and t.server = 'console' and t.revoked_at is null
      and (t.expires_at is null or t.expires_at > now());
end $$;
revoke all on function bulkhead_console_proof(text) from public;

-- The operator a proof names, or insufficient_privilege. Never echoes the proof.
create function bulkhead_operator_proof(p_proof text) returns table (token_id text, label text, owner text)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  p record;
begin
  select * into p from public.bulkhead_console_proof(p_proof) limit 1;
  if not found then
    raise exception 'no signed-in approver: the token or session presented is unknown, expired or revoked'
      using errcode = 'insufficient_privilege';
  end if;
  if not 'tokens:manage' = any (p.scopes) then
    raise exception 'token % may not operate: it lacks tokens:manage', p.token_id using errcode = 'insufficient_privilege';
  end if;
  return query select p.token_id, p.label, p.owner;
end $$;
revoke all on function bulkhead_operator_proof(text) from public;

-- Sign-in: opens a session for the approver whose token is presented in full. Only the hash of the
-- session's cookie value is kept; the console cannot open a session for a token whose secret it lacks.
create function bulkhead_console_sign_in(p_token text, p_session text, p_csrf text, p_hours double precision)
returns table (token_id text, label text, owner text, operator boolean)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  p record;
begin
  if p_token is null or p_token !~ '^bh_console_' then
    raise exception 'a session is opened with an approver token' using errcode = 'insufficient_privilege';
  end if;
  select * into p from public.bulkhead_console_proof(p_token) limit 1;
  if not found then
    raise exception 'the approver token is unknown, expired or revoked' using errcode = 'insufficient_privilege';
  end if;
  if p_session is null or length(p_session) not between 32 and 200 or p_csrf is null or length(p_csrf) < 32 then
    raise exception 'a session id and its CSRF token are random values of at least 32 characters'
      using errcode = 'check_violation';
  end if;
  if p_hours is null or p_hours <= 0 or p_hours > 168 then
    raise exception 'a console session lasts up to 168 hours' using errcode = 'check_violation';
  end if;
  insert into public.bulkhead_console_sessions (id_hash, token_id, csrf, expires_at)
    values (sha256(convert_to(p_session, 'UTF8')), p.token_id, p_csrf, now() + p_hours * interval '1 hour');
  return query select p.token_id, p.label, p.owner, 'tokens:manage' = any (p.scopes);
end $$;
revoke all on function bulkhead_console_sign_in(text, text, text, double precision) from public;

-- The approver behind a session cookie, with the session's CSRF token, while both are valid (touches it).
create function bulkhead_console_session(p_session text)
returns table (token_id text, label text, owner text, scopes text[], csrf text)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  p record;
  h bytea := sha256(convert_to(coalesce(p_session, ''), 'UTF8'));
begin
  if p_session is null or p_session ~ '^bh_' then return; end if;
  select * into p from public.bulkhead_console_proof(p_session) limit 1;
  if not found then return; end if;
  return query update public.bulkhead_console_sessions s set last_seen_at = now() where s.id_hash = h
    returning p.token_id, p.label, p.owner, p.scopes, s.csrf;
end $$;
revoke all on function bulkhead_console_session(text) from public;

-- Sign-out: ends the session whose cookie value is presented.
create function bulkhead_console_sign_out(p_session text) returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  delete from public.bulkhead_console_sessions where id_hash = sha256(convert_to(coalesce(p_session, ''), 'UTF8'));
  return found;
end $$;
revoke all on function bulkhead_console_sign_out(text) from public;

-- Records the approver a proof names for the current transaction (and answers who it is): a decision
-- and a read of the whole audit log are accepted only in a transaction with such a row. One
-- transaction acts for one approver. Rows of finished transactions are dropped on the way.
create function bulkhead_console_prove(p_proof text)
returns table (token_id text, label text, owner text, operator boolean, self_approval boolean)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  p record;
  x xid8 := pg_current_xact_id();
begin
  select * into p from public.bulkhead_console_proof(p_proof) limit 1;
  if not found then
    raise exception 'no signed-in approver: the token or session presented is unknown, expired or revoked'
      using errcode = 'insufficient_privilege';
  end if;
  delete from public.bulkhead_console_proofs where xact in (select f.xact from public.bulkhead_console_proofs f
    where f.xact < pg_snapshot_xmin(pg_current_snapshot()) for update skip locked);
  insert into public.bulkhead_console_proofs (xact, token_id, label, owner, operator, self_approval)
    values (x, p.token_id, p.label, p.owner, 'tokens:manage' = any (p.scopes),
      coalesce((select s.value = 'on' from public.bulkhead_settings s where s.name = 'allow_self_approval'), false))
    on conflict (xact) do nothing;
  if exists (select 1 from public.bulkhead_console_proofs f where f.xact = x and f.token_id <> p.token_id) then
    raise exception 'one transaction acts for one approver' using errcode = 'insufficient_privilege';
  end if;
  return query select f.token_id, f.label, f.owner, f.operator, f.self_approval
    from public.bulkhead_console_proofs f where f.xact = x;
end $$;
revoke all on function bulkhead_console_prove(text) from public;

-- The approver proven in the current transaction, if any, while their token is still live.
create function bulkhead_console_proven()
returns table (token_id text, label text, owner text, operator boolean, self_approval boolean)
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select f.token_id, f.label, f.owner, f.operator, f.self_approval
  from public.bulkhead_console_proofs f join public.bulkhead_tokens t on t.id = f.token_id
  where f.xact = pg_current_xact_id_if_assigned() and t.kind = 'approver' and t.server = 'console'
    and t.revoked_at is null and (t.expires_at is null or t.expires_at > now())
$$;
revoke all on function bulkhead_console_proven() from public;

-- The console reads the whole audit log only in a transaction where an operator proved themselves
-- (replaces the `bulkhead.operator` setting, which the console's login could set to any id).
create or replace function bulkhead_reading_as_operator() returns boolean
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select coalesce((select f.operator and public.bulkhead_operator(f.token_id) from public.bulkhead_console_proven() f), false)
$$;

-- The operator functions, now on a proof. Same answers as 0044; who acted is derived from the proof.
drop function bulkhead_operator_tokens(text);
drop function bulkhead_operator_issue_token(text, text, bytea, text, text, text[], text, text, timestamptz, text);
drop function bulkhead_operator_revoke_token(text, text);
drop function bulkhead_operator_revoke_grant(text, text);
drop function bulkhead_operator_revoke_person(text, text);
drop function bulkhead_operator_tool_switches(text);
drop function bulkhead_operator_switch_tool(text, text, text, boolean, text, text);
drop function bulkhead_operator_check(text);

create function bulkhead_operator_tokens(p_proof text)
returns table (id text, kind text, server text, label text, scopes text[], customer_id text, owner text,
  created_at timestamptz, created_by text, expires_at timestamptz, revoked_at timestamptz,
  last_used_at timestamptz, grant_id text)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_proof(p_proof);
  return query select t.id, t.kind, t.server, t.label, t.scopes, t.customer_id, t.owner, t.created_at,
    t.created_by, t.expires_at, t.revoked_at, t.last_used_at, t.grant_id
    from public.bulkhead_tokens t order by t.created_at desc, t.id;
end $$;
revoke all on function bulkhead_operator_tokens(text) from public;

-- Issues an MCP token for an MCP server, recorded as created by `console: <the operator's label>`.
create function bulkhead_operator_issue_token(p_proof text, p_id text, p_secret_hash bytea, p_server text,
  p_label text, p_scopes text[], p_customer_id text, p_owner text, p_expires_at timestamptz)
returns table (id text, created_at timestamptz, expires_at timestamptz)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
#variable_conflict use_column
declare
  op record;
begin
  select * into op from public.bulkhead_operator_proof(p_proof);
  if not exists (select 1 from public.bulkhead_deployables d where d.name = p_server and d.kind = 'mcp') then
    raise exception '% is not an MCP server', p_server using errcode = 'check_violation';
  end if;
  return query with issued as (insert into public.bulkhead_tokens as t (id, kind, server, label, scopes, customer_id, secret_hash,
      created_by, expires_at, owner)
    values (p_id, 'mcp', p_server, p_label, p_scopes, p_customer_id, p_secret_hash, 'console: ' || op.label, p_expires_at,
      nullif(btrim(p_owner), ''))
    returning t.id, t.created_at, t.expires_at) select * from issued;
end $$;
revoke all on function bulkhead_operator_issue_token(text, text, bytea, text, text, text[], text, text, timestamptz)
  from public;

create function bulkhead_operator_revoke_token(p_proof text, p_token_id text) returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_proof(p_proof);
  update public.bulkhead_tokens set revoked_at = now() where id = p_token_id and revoked_at is null;
  return found;
end $$;
revoke all on function bulkhead_operator_revoke_token(text, text) from public;

create function bulkhead_operator_revoke_grant(p_proof text, p_grant_id text) returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_proof(p_proof);
  update public.bulkhead_oauth_grants set revoked_at = now(), revoked_reason = 'revoked_by_operator'
    where id = p_grant_id and revoked_at is null;
  return found;
end $$;
revoke all on function bulkhead_operator_revoke_grant(text, text) from public;

create function bulkhead_operator_revoke_person(p_proof text, p_person text)
returns table (tokens integer, grants integer)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  g integer;
  t integer;
begin
  perform public.bulkhead_operator_proof(p_proof);
  update public.bulkhead_oauth_grants set revoked_at = now(), revoked_reason = 'person_offboarded'
    where revoked_at is null and owner is not null and public.bulkhead_same_person(owner, p_person);
  get diagnostics g = row_count;
  update public.bulkhead_tokens set revoked_at = now()
    where revoked_at is null and owner is not null and public.bulkhead_same_person(owner, p_person);
  get diagnostics t = row_count;
  return query select t, g;
end $$;
revoke all on function bulkhead_operator_revoke_person(text, text) from public;

create function bulkhead_operator_tool_switches(p_proof text)
returns table (server text, tool text, reason text, switched_by text, switched_at timestamptz)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_proof(p_proof);
  return query select s.server, s.tool, s.reason, s.switched_by, s.switched_at
    from public.bulkhead_tool_switches s order by s.server, s.tool;
end $$;
revoke all on function bulkhead_operator_tool_switches(text) from public;

-- Switches one tool off (with a reason) or on again, recorded as switched by the operator's person
-- (or token label when the token names no person).
create function bulkhead_operator_switch_tool(p_proof text, p_server text, p_tool text, p_off boolean, p_reason text)
returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  op record;
begin
  select * into op from public.bulkhead_operator_proof(p_proof);
  if not exists (select 1 from public.bulkhead_deployables d where d.name = p_server and d.kind = 'mcp') then
    raise exception '% is not an MCP server', p_server using errcode = 'check_violation';
  end if;
  if p_off then
    insert into public.bulkhead_tool_switches (server, tool, reason, switched_by)
      values (p_server, p_tool, p_reason, coalesce(op.owner, op.label)) on conflict do nothing;
  else
    delete from public.bulkhead_tool_switches where server = p_server and tool = p_tool;
  end if;
  return found;
end $$;
revoke all on function bulkhead_operator_switch_tool(text, text, text, boolean, text) from public;

-- OAuth. A grant and its code are recorded only for an approver who proves themselves and may grant;
-- who granted comes from the proof. An access token is issued only to whoever presents the grant's
-- authorization code with its PKCE verifier, or a live refresh token of the grant, each redeemed once
-- here (the console's own `used_at` marks stay its replay detection). The console's login no longer
-- writes grants, codes or refresh tokens: it holds none of their secrets, only hashes.
alter table bulkhead_oauth_codes add column redeemed_at timestamptz;
alter table bulkhead_oauth_refresh_tokens add column redeemed_at timestamptz;

create function bulkhead_oauth_grant(p_proof text, p_grant_id text, p_client_id text, p_server text, p_scopes text[],
  p_customer_id text, p_code text, p_redirect_uri text, p_code_challenge text, p_resource text, p_code_seconds integer)
returns void
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  p record;
begin
  select * into p from public.bulkhead_console_proof(p_proof) limit 1;
  if not found then
    raise exception 'no signed-in approver: the token or session presented is unknown, expired or revoked'
      using errcode = 'insufficient_privilege';
  end if;
  if not 'grants:issue' = any (p.scopes) then
    raise exception 'token % may not grant OAuth access: it lacks grants:issue', p.token_id
      using errcode = 'insufficient_privilege';
  end if;
  if not exists (select 1 from public.bulkhead_deployables d where d.name = p_server and d.kind = 'mcp') then
    raise exception '% is not an MCP server', p_server using errcode = 'check_violation';
  end if;
  if p_code is null or p_code !~ '^bhc_[A-Za-z0-9_-]{43}$' or p_code_seconds is null or p_code_seconds not between 1 and 600 then
    raise exception 'an authorization code is bhc_ and 43 random characters, living up to 10 minutes'
      using errcode = 'check_violation';
  end if;
  -- Codes live minutes; a day later one presented again is merely unknown, not a replay to act on.
  delete from public.bulkhead_oauth_codes where expires_at < now() - interval '1 day';
  insert into public.bulkhead_oauth_grants (id, client_id, server, scopes, customer_id, granted_by_token_id, granted_by, owner)
    values (p_grant_id, p_client_id, p_server, p_scopes, p_customer_id, p.token_id, p.label, p.owner);
  insert into public.bulkhead_oauth_codes (code_hash, grant_id, client_id, redirect_uri, code_challenge, resource, expires_at)
    values (sha256(convert_to(p_code, 'UTF8')), p_grant_id, p_client_id, p_redirect_uri, p_code_challenge, p_resource,
      now() + p_code_seconds * interval '1 second');
end $$;
revoke all on function bulkhead_oauth_grant(text, text, text, text, text[], text, text, text, text, text, integer) from public;

drop function bulkhead_oauth_issue_token(text, text, bytea, text, timestamptz);

-- Issues the access token (and the next refresh token) of a live grant for the holder of its code and
-- PKCE verifier (S256), or of a live refresh token of it. The token carries the grant's server, scopes,
-- customer and owner; the caller chooses only ids, hashes of fresh secrets, a label and lifetimes.
create function bulkhead_oauth_issue_token(p_grant_id text, p_secret text, p_verifier text, p_id text,
  p_secret_hash bytea, p_label text, p_expires_at timestamptz, p_refresh_id text, p_refresh_hash bytea,
  p_refresh_expires_at timestamptz)
returns table (token_id text, server text, scopes text[], customer_id text, expires_at timestamptz)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  g public.bulkhead_oauth_grants;
  m text[];
begin
  if p_secret ~ '^bhc_' then
    update public.bulkhead_oauth_codes c set redeemed_at = now()
      where c.code_hash = sha256(convert_to(p_secret, 'UTF8')) and c.grant_id = p_grant_id and c.redeemed_at is null
        and c.expires_at > now() and p_verifier ~ '^[A-Za-z0-9._~-]{43,128}$'
        and c.code_challenge = rtrim(translate(encode(sha256(convert_to(p_verifier, 'UTF8')), 'base64'), '+/', '-_'), '=');
  else
    m := regexp_match(p_secret, '^bhr_([A-Za-z0-9_-]{16})_([A-Za-z0-9_-]{43})$');
    update public.bulkhead_oauth_refresh_tokens r set redeemed_at = now()
      where m is not null and r.id = m[1] and r.secret_hash = sha256(convert_to(m[2], 'UTF8'))
        and r.grant_id = p_grant_id and r.redeemed_at is null and r.expires_at > now();
  end if;
  if not found then
    raise exception 'grant % is opened only with its unused authorization code and PKCE verifier, or a live refresh token',
      p_grant_id using errcode = 'insufficient_privilege';
  end if;
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
  if p_refresh_expires_at <= now() or p_refresh_expires_at > now() + interval '31 days' then
    raise exception 'an OAuth refresh token lives for up to 31 days' using errcode = 'check_violation';
  end if;
  insert into public.bulkhead_tokens (id, kind, server, label, scopes, customer_id, secret_hash, created_by, expires_at,
    owner, grant_id)
  values (p_id, 'mcp', g.server, left(p_label, 200), g.scopes, g.customer_id, p_secret_hash,
    'oauth:' || g.granted_by, p_expires_at, g.owner, g.id);
  insert into public.bulkhead_oauth_refresh_tokens (id, grant_id, secret_hash, expires_at)
    values (p_refresh_id, g.id, p_refresh_hash, p_refresh_expires_at);
  return query select p_id, g.server, g.scopes, g.customer_id, p_expires_at;
end $$;
revoke all on function bulkhead_oauth_issue_token(text, text, text, text, bytea, text, timestamptz, text, bytea, timestamptz)
  from public;

-- Approvals (0038), with a decision taken only by the approver proven in the same transaction
-- (`bulkhead_console_prove`): the decider's token id and label must be that approver's, and separation
-- of duties is switched off only by the owner's setting, never by the session.
create or replace function bulkhead_approvals_guard() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
declare
  me text;
  proof record;
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
    select * into proof from public.bulkhead_console_proven() limit 1;
    if not found then
      raise exception 'a decision on % is taken by an approver who presents their token or console session in the same transaction',
        old.id using errcode = 'insufficient_privilege';
    end if;
    if new.decided_by_token_id is distinct from proof.token_id then
      raise exception 'a decision is recorded under the approver who proved it (%), not %', proof.token_id,
        new.decided_by_token_id using errcode = 'check_violation';
    end if;
    if new.decided_by is null or new.decided_by not in ('console:' || proof.label, 'cli:' || proof.label) then
      raise exception 'the decider is recorded as its approver token''s label (console:% or cli:%), not %',
        proof.label, proof.label, new.decided_by using errcode = 'check_violation';
    end if;
    if new.decided_by_token_id is not distinct from old.requested_by_token_id then
      raise exception 'approval % cannot be decided with the token that requested it', old.id using errcode = 'check_violation';
    end if;
    if new.status = 'approved' and not proof.self_approval then
      requester_owner := public.bulkhead_token_owner(old.requested_by_token_id);
      if proof.owner is not null and requester_owner is not null
         and public.bulkhead_same_person(proof.owner, requester_owner) then
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
