-- Operators (issue 33): a person who manages tokens, OAuth grants and tool switches in the console and
-- reads the whole audit log there. The right is the scope tokens:manage on the person's approver token
-- (`bulkhead approvers add --can-manage-tokens`), distinct from deciding approvals and from granting
-- OAuth access. The console's role never writes the token table or the switches: every operator action
-- goes through a function below, which first checks that the token it is handed may operate.

-- Whether an approver token is live and carries the operator right.
create function bulkhead_operator(p_id text) returns boolean
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select coalesce((select 'tokens:manage' = any (t.scopes) from public.bulkhead_tokens t
    where t.id = p_id and t.kind = 'approver' and t.server = 'console' and t.revoked_at is null
      and (t.expires_at is null or t.expires_at > now())), false)
$$;
revoke all on function bulkhead_operator(text) from public;

create function bulkhead_operator_check(p_id text) returns void
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  if not public.bulkhead_operator(p_id) then
    raise exception 'token % may not operate: it lacks tokens:manage, or is revoked or expired', p_id
      using errcode = 'insufficient_privilege';
  end if;
end $$;
revoke all on function bulkhead_operator_check(text) from public;

-- The console reads the whole audit log (and the seals) only in a transaction that names an operator
-- (`set_config('bulkhead.operator', <token id>, true)`); otherwise only the events of approvals.
create function bulkhead_reading_as_operator() returns boolean
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select public.bulkhead_operator(nullif(current_setting('bulkhead.operator', true), ''))
$$;
revoke all on function bulkhead_reading_as_operator() from public;

-- Every token, never its secret, for the operator's pages.
create function bulkhead_operator_tokens(p_operator text)
returns table (id text, kind text, server text, label text, scopes text[], customer_id text, owner text,
  created_at timestamptz, created_by text, expires_at timestamptz, revoked_at timestamptz,
  last_used_at timestamptz, grant_id text)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_check(p_operator);
  return query select t.id, t.kind, t.server, t.label, t.scopes, t.customer_id, t.owner, t.created_at,
    t.created_by, t.expires_at, t.revoked_at, t.last_used_at, t.grant_id
    from public.bulkhead_tokens t order by t.created_at desc, t.id;
end $$;
revoke all on function bulkhead_operator_tokens(text) from public;

-- Issues an MCP token for an MCP server (the console checks scopes and customer against the server's
-- manifest, as the CLI does). Only the secret's hash is handed in.
create function bulkhead_operator_issue_token(p_operator text, p_id text, p_secret_hash bytea, p_server text,
  p_label text, p_scopes text[], p_customer_id text, p_owner text, p_expires_at timestamptz, p_created_by text)
returns table (id text, created_at timestamptz, expires_at timestamptz)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
#variable_conflict use_column
begin
  perform public.bulkhead_operator_check(p_operator);
  if not exists (select 1 from public.bulkhead_deployables d where d.name = p_server and d.kind = 'mcp') then
    raise exception '% is not an MCP server', p_server using errcode = 'check_violation';
  end if;
  return query with issued as (insert into public.bulkhead_tokens as t (id, kind, server, label, scopes, customer_id, secret_hash,
      created_by, expires_at, owner)
    values (p_id, 'mcp', p_server, p_label, p_scopes, p_customer_id, p_secret_hash, p_created_by, p_expires_at,
      nullif(btrim(p_owner), ''))
    returning t.id, t.created_at, t.expires_at) select * from issued;
end $$;
revoke all on function bulkhead_operator_issue_token(text, text, bytea, text, text, text[], text, text, timestamptz, text)
  from public;

-- Revokes one token (an MCP or an approver token); false when it was already revoked or is unknown.
create function bulkhead_operator_revoke_token(p_operator text, p_token_id text) returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_check(p_operator);
  update public.bulkhead_tokens set revoked_at = now() where id = p_token_id and revoked_at is null;
  return found;
end $$;
revoke all on function bulkhead_operator_revoke_token(text, text) from public;

-- Revokes one OAuth grant, and with it its access and refresh tokens.
create function bulkhead_operator_revoke_grant(p_operator text, p_grant_id text) returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_check(p_operator);
  update public.bulkhead_oauth_grants set revoked_at = now(), revoked_reason = 'revoked_by_operator'
    where id = p_grant_id and revoked_at is null;
  return found;
end $$;
revoke all on function bulkhead_operator_revoke_grant(text, text) from public;

-- Offboarding: every live token (MCP and approver) and OAuth grant of one person, the person compared
-- as separation of duties compares them. Answers what was revoked.
create function bulkhead_operator_revoke_person(p_operator text, p_person text)
returns table (tokens integer, grants integer)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  g integer;
  t integer;
begin
  perform public.bulkhead_operator_check(p_operator);
  update public.bulkhead_oauth_grants set revoked_at = now(), revoked_reason = 'person_offboarded'
    where revoked_at is null and owner is not null and public.bulkhead_same_person(owner, p_person);
  get diagnostics g = row_count;
  -- A grant's access tokens were revoked with it (trigger); these are the rest.
  update public.bulkhead_tokens set revoked_at = now()
    where revoked_at is null and owner is not null and public.bulkhead_same_person(owner, p_person);
  get diagnostics t = row_count;
  return query select t, g;
end $$;
revoke all on function bulkhead_operator_revoke_person(text, text) from public;

-- Every switched-off tool of every server.
create function bulkhead_operator_tool_switches(p_operator text)
returns table (server text, tool text, reason text, switched_by text, switched_at timestamptz)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_check(p_operator);
  return query select s.server, s.tool, s.reason, s.switched_by, s.switched_at
    from public.bulkhead_tool_switches s order by s.server, s.tool;
end $$;
revoke all on function bulkhead_operator_tool_switches(text) from public;

-- Switches one tool of an MCP server off (with a reason) or on again; false when it already was.
create function bulkhead_operator_switch_tool(p_operator text, p_server text, p_tool text, p_off boolean,
  p_reason text, p_by text) returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_check(p_operator);
  if not exists (select 1 from public.bulkhead_deployables d where d.name = p_server and d.kind = 'mcp') then
    raise exception '% is not an MCP server', p_server using errcode = 'check_violation';
  end if;
  if p_off then
    insert into public.bulkhead_tool_switches (server, tool, reason, switched_by)
      values (p_server, p_tool, p_reason, p_by) on conflict do nothing;
  else
    delete from public.bulkhead_tool_switches where server = p_server and tool = p_tool;
  end if;
  return found;
end $$;
revoke all on function bulkhead_operator_switch_tool(text, text, text, boolean, text, text) from public;
