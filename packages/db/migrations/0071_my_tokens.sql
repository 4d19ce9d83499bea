-- People issue their own per-access tokens (issue 46, item 3): the console's "My tokens" page, for a person
-- signed in by OpenID Connect. And separation of duties compares persons, not strings.
--
-- What the database verifies. Every function here takes the console session's secret (the cookie value) and
-- derives the person from it (0045, 0063): no function takes a person id, a name or a token owner, so the
-- console's login can act only for a person who is signed in (it sees their cookies), never for anyone by id.
-- A token is issued only for an MCP server and scopes the person's groups allow them to hold now
-- (`bulkhead_person_may_hold`, the check an OAuth grant by a person and an ID-JAG exchange make), for at most
-- a year, owned by the person (`person_id`; `owner` is their e-mail, so that the name comparisons of tokens
-- issued by hand still find it). A person lists and revokes only tokens whose `person_id` is theirs. What
-- stays the console's claim, as for operators: the customer a customer-bound token is bound to (the group
-- mapping names servers and scopes, not customers), checked against the server's manifest by the console.
--
-- Separation of duties. The approvals guard (0064) compared the requester's and the approver's names
-- (`bulkhead_same_person`). Where both sides are persons (the requesting token's `person_id`, the approver's
-- console identity) it now compares person ids: a person whose e-mail changed still cannot approve their own
-- request, and two persons whose names collide do not block each other. The name comparison stays for
-- tokens issued by hand, which have no person.

-- The person a console session's secret proves (0063: an OpenID Connect session, live, the person active).
create function bulkhead_person_proof(p_proof text)
returns table (person_id text, name text, email text, subject text, groups text[], token_id text)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  p record;
begin
  select * into p from public.bulkhead_console_proof(p_proof) limit 1;
  if not found then
    raise exception 'no signed-in person: the session presented is unknown, expired or revoked'
      using errcode = 'insufficient_privilege';
  end if;
  return query select x.id, x.name, x.email, x.subject, x.groups, t.id
    from public.bulkhead_tokens t join public.bulkhead_persons x on x.id = t.person_id
    where t.id = p.token_id and x.deactivated_at is null;
  if not found then
    raise exception '% is an approver token, not a person signed in at the identity provider: tokens of one''s own are issued to persons',
      p.label using errcode = 'insufficient_privilege';
  end if;
end $$;
revoke all on function bulkhead_person_proof(text) from public;

-- The proven person, with the groups of theirs that are mapped to hold tokens and those rights
-- (`server` or `server:scope`, as `bulkhead groups add --tokens` wrote them).
create function bulkhead_my_rights(p_proof text)
returns table (person_id text, name text, email text, groups text[], token_groups text[], tokens text[])
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  me record;
begin
  select * into me from public.bulkhead_person_proof(p_proof);
  return query select me.person_id, me.name, me.email, me.groups,
    coalesce((select array_agg(g.idp_group order by g.idp_group) from public.bulkhead_groups g
      where g.idp_group = any (me.groups) and cardinality(g.tokens) > 0), '{}'),
    coalesce((select array_agg(distinct r order by r) from public.bulkhead_groups g, unnest(g.tokens) r
      where g.idp_group = any (me.groups)), '{}');
end $$;
revoke all on function bulkhead_my_rights(text) from public;

-- The proven person's MCP tokens that are live (not revoked, not expired), newest first.
create function bulkhead_my_tokens(p_proof text)
returns table (id text, server text, label text, scopes text[], customer_id text, created_at timestamptz,
  created_by text, expires_at timestamptz, last_used_at timestamptz)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  me record;
begin
  select * into me from public.bulkhead_person_proof(p_proof);
  return query select t.id, t.server, t.label, t.scopes, t.customer_id, t.created_at, t.created_by, t.expires_at,
      t.last_used_at
    from public.bulkhead_tokens t
    where t.person_id = me.person_id and t.kind = 'mcp' and t.revoked_at is null
      and (t.expires_at is null or t.expires_at > now())
    order by t.created_at desc, t.id;
end $$;
revoke all on function bulkhead_my_tokens(text) from public;

-- Issues an MCP token (id and secret's hash chosen by the caller) to the proven person, for a server and
-- scopes their groups allow them to hold now, expiring within a year.
create function bulkhead_my_issue_token(p_proof text, p_id text, p_secret_hash bytea, p_server text, p_label text,
  p_scopes text[], p_customer_id text, p_expires_at timestamptz)
returns table (id text, owner text, created_at timestamptz, expires_at timestamptz)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
#variable_conflict use_column
declare
  me record;
  shown text;
begin
  select * into me from public.bulkhead_person_proof(p_proof);
  shown := coalesce(me.name, me.email, me.subject);
  if not exists (select 1 from public.bulkhead_deployables d where d.name = p_server and d.kind = 'mcp') then
    raise exception '% is not an MCP server', p_server using errcode = 'check_violation';
  end if;
  if p_scopes is null or cardinality(p_scopes) = 0 or array_position(p_scopes, null) is not null then
    raise exception 'a token carries at least one scope' using errcode = 'check_violation';
  end if;
  if not public.bulkhead_person_may_hold(me.person_id, p_server, p_scopes) then
    raise exception '% may not hold a token for % with scopes %: none of their groups (%) is mapped to --tokens % (or to each of those scopes)',
      shown, p_server, array_to_string(p_scopes, ' '), array_to_string(me.groups, ', '), p_server
      using errcode = 'insufficient_privilege';
  end if;
  if p_label is null or length(btrim(p_label)) not between 1 and 200 then
    raise exception 'a token''s label is 1 to 200 characters' using errcode = 'check_violation';
  end if;
  if p_id is null or p_id !~ '^[a-z2-9]{12}$' or p_secret_hash is null or length(p_secret_hash) <> 32 then
    raise exception 'a token id is 12 of [a-z2-9], its secret''s hash a SHA-256' using errcode = 'check_violation';
  end if;
  if p_expires_at is null or p_expires_at <= now() or p_expires_at > now() + interval '366 days' then
    raise exception 'a token of one''s own expires, within a year' using errcode = 'check_violation';
  end if;
  return query with issued as (insert into public.bulkhead_tokens as t (id, kind, server, label, scopes, customer_id,
      secret_hash, created_by, expires_at, owner, person_id)
    values (p_id, 'mcp', p_server, btrim(p_label), p_scopes, p_customer_id, p_secret_hash,
      left('my tokens: ' || shown, 200), p_expires_at, coalesce(me.email, shown), me.person_id)
    returning t.id, t.owner, t.created_at, t.expires_at) select * from issued;
end $$;
revoke all on function bulkhead_my_issue_token(text, text, bytea, text, text, text[], text, timestamptz) from public;

-- Revokes one of the proven person's MCP tokens. No row for a token that is not theirs (whoever's it is);
-- `revoked` is false for one of theirs that was revoked already.
create function bulkhead_my_revoke_token(p_proof text, p_token_id text)
returns table (id text, server text, label text, revoked boolean)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
#variable_conflict use_column
declare
  me record;
  t public.bulkhead_tokens;
begin
  select * into me from public.bulkhead_person_proof(p_proof);
  select * into t from public.bulkhead_tokens k
    where k.id = p_token_id and k.person_id = me.person_id and k.kind = 'mcp' for update;
  if not found then return; end if;
  update public.bulkhead_tokens k set revoked_at = now() where k.id = t.id and k.revoked_at is null;
  return query select t.id, t.server, t.label, found;
end $$;
revoke all on function bulkhead_my_revoke_token(text, text) from public;

-- Whether the approver proven in this transaction (0045) holds the token that requested a pending approval:
-- the same person (ids) when both are persons, else the same name (0049), as before. No answer (false) for
-- a token that requested nothing pending, so that the console's login learns nothing of other tokens.
create function bulkhead_proven_is_requester(p_token_id text) returns boolean
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select coalesce((
    select case when a.person_id is not null and r.person_id is not null then a.person_id = r.person_id
      else f.owner is not null and r.owner is not null and public.bulkhead_same_person(f.owner, r.owner) end
    from public.bulkhead_console_proven() f
      join public.bulkhead_tokens a on a.id = f.token_id
      join public.bulkhead_tokens r on r.id = p_token_id
    where exists (select 1 from public.bulkhead_approvals x where x.requested_by_token_id = r.id and x.status = 'pending')
    limit 1), false)
$$;
revoke all on function bulkhead_proven_is_requester(text) from public;

create or replace function bulkhead_approvals_guard() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
declare
  me text;
  proof record;
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
    if not public.bulkhead_console_may_decide(old.server) then
      raise exception '% may not decide requests of %: none of their groups is mapped to approve %', proof.label,
        old.server, old.server using errcode = 'insufficient_privilege';
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
    if new.status = 'approved' and not proof.self_approval
       and public.bulkhead_proven_is_requester(old.requested_by_token_id) then
      raise exception 'approval % was requested by %, who may not approve it too', old.id,
        coalesce(public.bulkhead_token_owner(old.requested_by_token_id), proof.label) using errcode = 'check_violation';
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
