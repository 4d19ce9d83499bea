-- Rights from groups at every decision and every grant (issue 46, item 2), and the operators' pages for
-- the group mapping. The approvals guard (0045) now also asks `bulkhead_console_may_decide`: a person
-- decides only requests of a server one of their groups is mapped to approve, read at the moment of the
-- decision (an approver token issued by hand decides every server, as before). An OAuth grant by a person
-- (0045) is only for a server and scopes their groups allow them to hold.

create or replace function bulkhead_oauth_grant(p_proof text, p_grant_id text, p_client_id text, p_server text, p_scopes text[],
  p_customer_id text, p_code text, p_redirect_uri text, p_code_challenge text, p_resource text, p_code_seconds integer)
returns void
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  p record;
  person text;
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
  select t.person_id into person from public.bulkhead_tokens t where t.id = p.token_id;
  if person is not null and not public.bulkhead_person_may_hold(person, p_server, p_scopes) then
    raise exception '% may not grant access to % with scopes %: none of their groups is mapped to --tokens % (or to each of those scopes)',
      p.label, p_server, array_to_string(p_scopes, ' '), p_server using errcode = 'insufficient_privilege';
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

-- The group mapping, for operators in the console (proof as in 0045). Changes are written with their
-- audit event by the console in the same transaction; who changed is derived from the proof.
create function bulkhead_operator_groups(p_proof text)
returns table (idp_group text, approve text[], operate boolean, tokens text[], updated_at timestamptz, updated_by text)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_proof(p_proof);
  return query select g.idp_group, g.approve, g.operate, g.tokens, g.updated_at, g.updated_by
    from public.bulkhead_groups g order by g.idp_group;
end $$;
revoke all on function bulkhead_operator_groups(text) from public;

create function bulkhead_operator_set_group(p_proof text, p_group text, p_approve text[], p_operate boolean,
  p_tokens text[]) returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  op record;
  bad text;
begin
  select * into op from public.bulkhead_operator_proof(p_proof);
  select s into bad from unnest(p_approve || array(select split_part(x, ':', 1) from unnest(p_tokens) x)) s
    where not exists (select 1 from public.bulkhead_deployables d where d.name = s and d.kind = 'mcp') limit 1;
  if bad is not null then
    raise exception '% is not an MCP server', bad using errcode = 'check_violation';
  end if;
  insert into public.bulkhead_groups as g (idp_group, approve, operate, tokens, updated_by)
    values (btrim(p_group), p_approve, p_operate, p_tokens, 'console: ' || coalesce(op.owner, op.label))
    on conflict (idp_group) do update set approve = excluded.approve, operate = excluded.operate,
      tokens = excluded.tokens, updated_by = excluded.updated_by, updated_at = now();
  return true;
end $$;
revoke all on function bulkhead_operator_set_group(text, text, text[], boolean, text[]) from public;

create function bulkhead_operator_remove_group(p_proof text, p_group text) returns boolean
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_operator_proof(p_proof);
  delete from public.bulkhead_groups where idp_group = p_group;
  return found;
end $$;
revoke all on function bulkhead_operator_remove_group(text, text) from public;
