-- Proportionate gates, enforced in the database (issue 47, item 3). A call's policy outcome is stored
-- with the approval it files: how many distinct persons must approve, from which groups, under which
-- policy set version and by which policies. The approvals guard then lets the request become
-- `approved` only once that many distinct persons — compared as persons (the IdP's person, else the
-- name's key, 0049), never as strings — from those groups have approved it, each vote with its own
-- decision event; until then a vote leaves it pending. A policy that lets a gated tool run without a
-- person files its request approved at once, and the guard accepts that only when the active policy set
-- is the one named and every policy named is a permit of it that asks for no approval; its effects
-- still go through the executor and the outbox, exactly once.
--
-- What stays the server's claim: the database cannot run Cedar, so the quorum and groups a server
-- stores, and whether a named run-permit's condition held, are what the server computed from the active
-- set. A compromised server login can file a request with a smaller quorum than the policy asks, or file
-- as run by a permit that exists but whose condition did not hold; it cannot approve a request that
-- needs a person, pick a policy set that is not active, or count one person twice.

alter table bulkhead_approvals
  add column required_approvals integer not null default 1 check (required_approvals between 1 and 9),
  add column approver_groups text[] not null default '{}' check (cardinality(approver_groups) <= 20),
  add column policy_version text check (policy_version ~ '^[0-9a-f]{64}$'),
  add column policy_ids text[] not null default '{}' check (cardinality(policy_ids) <= 50),
  add column approved_by_policy boolean not null default false;

-- Groups of a hand-issued approver token (`bulkhead approvers add --group`): a person from the IdP has
-- the groups of bulkhead_persons; a token issued by hand has these.
alter table bulkhead_tokens add column groups text[] not null default '{}' check (cardinality(groups) <= 50);

-- One row a person who approved a request that needs more than one: the guard writes it, nobody else.
create table bulkhead_approval_votes (
  approval_id text not null references bulkhead_approvals (id),
  -- `person:<id>` for a person from the IdP, else `name:<key of the token's owner or label>`.
  person text not null,
  token_id text not null,
  decided_by text not null,
  event_id uuid not null,
  voted_at timestamptz not null default now(),
  primary key (approval_id, person)
);
revoke all on bulkhead_approval_votes from public;
alter table bulkhead_approval_votes enable row level security;

-- Durable usage counts for policies (`context.usage.today`): calls of a tool by a token on a day (UTC),
-- counted in the call's transaction, across replicas.
create table bulkhead_policy_usage (
  server text not null,
  tool text not null,
  token_id text not null,
  day date not null,
  calls integer not null default 0 check (calls >= 0),
  primary key (server, tool, token_id, day)
);
revoke all on bulkhead_policy_usage from public;
alter table bulkhead_policy_usage enable row level security;

-- The calls of `p_tool` by `p_token_id` today before this one, the count's row locked until the call's
-- transaction ends (two replicas counting at once take turns); with `p_add`, this call is counted too.
-- Only for the calling server's own tools.
create function bulkhead_policy_usage_today(p_token_id text, p_tool text, p_add boolean) returns integer
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  -- The caller's deployable (a definer function's current_user is the owner).
  me text := public.bulkhead_deployable_of(public.bulkhead_caller());
  today date := (now() at time zone 'UTC')::date;
  n integer;
begin
  if me is null then
    raise exception 'role % serves no deployable', current_user using errcode = 'insufficient_privilege';
  end if;
  -- A live token of the calling server only. The count only grows: a login naming another token can
  -- use up that client's quota early (its calls are refused), never lift one.
  if not exists (select 1 from public.bulkhead_tokens t where t.id = p_token_id and t.server = me
      and t.revoked_at is null and (t.expires_at is null or t.expires_at > now())) then
    raise exception 'token % is no live token of %', p_token_id, me using errcode = 'insufficient_privilege';
  end if;
  insert into public.bulkhead_policy_usage (server, tool, token_id, day) values (me, p_tool, p_token_id, today)
    on conflict do nothing;
  select u.calls into n from public.bulkhead_policy_usage u
    where u.server = me and u.tool = p_tool and u.token_id = p_token_id and u.day = today for update;
  if p_add then
    update public.bulkhead_policy_usage u set calls = calls + 1
      where u.server = me and u.tool = p_tool and u.token_id = p_token_id and u.day = today;
  end if;
  return n;
end $$;
revoke all on function bulkhead_policy_usage_today(text, text, boolean) from public;

-- The groups of the caller a policy weighs (`principal in Bulkhead::Group::"…"`): the IdP groups of the
-- token's person, and those given to the token itself. Only for a live token of the calling server.
create function bulkhead_token_groups(p_token_id text) returns text[]
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select coalesce(p.groups, '{}') || t.groups
  from public.bulkhead_tokens t left join public.bulkhead_persons p on p.id = t.person_id and p.deactivated_at is null
  where t.id = p_token_id and t.server = public.bulkhead_deployable_of(public.bulkhead_caller())
    and t.revoked_at is null and (t.expires_at is null or t.expires_at > now())
$$;
revoke all on function bulkhead_token_groups(text) from public;

-- Whether `p_id` is a permit of `p_text` that asks for no approval (Cedar text, as the CLI validated it):
-- the annotations between its @id and its effect name no @approvals of 1 or more.
create function bulkhead_policy_runs(p_text text, p_id text) returns boolean
language plpgsql immutable set search_path = pg_catalog, public, pg_temp as $$
declare
  at integer := position('@id("' || replace(replace(p_id, '\', '\\'), '"', '\"') || '")' in p_text);
  rest text;
  head text;
begin
  if at = 0 then return false; end if;
  rest := substr(p_text, at);
  head := substring(rest from '^(.*?)\m(permit|forbid)\s*\(');
  if head is null then return false; end if;
  return substr(rest, length(head) + 1, 6) = 'permit' and head !~ '@approvals\s*\(\s*"[1-9]';
end $$;

-- The person behind the approver proven in this transaction, as votes compare them, and their groups.
create function bulkhead_console_proven_voter() returns table (person text, groups text[], token_id text, label text)
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select case when t.person_id is not null then 'person:' || t.person_id
      else 'name:' || public.bulkhead_person_key(coalesce(f.owner, f.label)) end,
    coalesce(p.groups, '{}') || t.groups, f.token_id, f.label
  from public.bulkhead_console_proven() f join public.bulkhead_tokens t on t.id = f.token_id
    left join public.bulkhead_persons p on p.id = t.person_id
  limit 1
$$;
revoke all on function bulkhead_console_proven_voter() from public;

-- Records the vote of the approver proven in this transaction on `p_approval`, whose decision event
-- `p_event` was written first in this transaction; returns how many distinct persons have voted.
create function bulkhead_approval_vote(p_approval text, p_event uuid, p_decided_by text) returns integer
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v record;
  n integer;
begin
  select * into v from public.bulkhead_console_proven_voter();
  if not found then
    raise exception 'a vote on % is cast by an approver who proves themselves in the same transaction', p_approval
      using errcode = 'insufficient_privilege';
  end if;
  if not exists (select 1 from public.audit_events e
      where e.id = p_event and e.approval_id = p_approval and e.method = 'approvals/decide'
        and e.outcome = 'approved' and e.token_id = v.token_id and e.xmin = pg_current_xact_id()::xid) then
    raise exception 'a vote on % is recorded with its audit event, written first in the same transaction', p_approval
      using errcode = 'check_violation';
  end if;
  if exists (select 1 from public.bulkhead_approval_votes x where x.approval_id = p_approval and x.person = v.person) then
    raise exception '% has already approved %: another person must approve it', v.label, p_approval
      using errcode = 'check_violation';
  end if;
  insert into public.bulkhead_approval_votes (approval_id, person, token_id, decided_by, event_id)
    values (p_approval, v.person, v.token_id, p_decided_by, p_event);
  select count(*) into n from public.bulkhead_approval_votes x where x.approval_id = p_approval;
  return n;
end $$;
revoke all on function bulkhead_approval_vote(text, uuid, text) from public;

-- Who has approved a request that needs more than one person so far (the console's progress line).
create function bulkhead_approval_votes_of(p_approval text)
returns table (person text, decided_by text, voted_at timestamptz)
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select x.person, x.decided_by, x.voted_at from public.bulkhead_approval_votes x where x.approval_id = p_approval
  order by x.voted_at
$$;
revoke all on function bulkhead_approval_votes_of(text) from public;

create or replace function bulkhead_approvals_guard() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
declare
  me text;
  proof record;
  voter record;
  active record;
  votes integer;
  pid text;
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
    if new.approved_by_policy then
      -- Run by policy: approved at once, by permits of the active set that ask for nobody.
      select * into active from public.bulkhead_active_policy() limit 1;
      if not found or new.policy_version is distinct from active.version then
        raise exception 'a request run by policy names the active policy set (%), not %', coalesce(active.version, 'none'),
          coalesce(new.policy_version, 'none') using errcode = 'insufficient_privilege';
      end if;
      if cardinality(new.policy_ids) = 0 then
        raise exception 'a request run by policy names the policies that let it run' using errcode = 'insufficient_privilege';
      end if;
      foreach pid in array new.policy_ids loop
        if not public.bulkhead_policy_runs(active.text, pid) then
          raise exception 'policy "%" of the active set does not let a call run without a person', pid
            using errcode = 'insufficient_privilege';
        end if;
      end loop;
      if new.status <> 'approved' or new.decided_by is distinct from 'policy:' || new.policy_ids[1]
         or new.decided_arguments_hash is distinct from new.arguments_hash
         or new.decided_by_token_id is not null or new.decision_event_id is not null
         or new.executed_at is not null or new.result is not null or new.failure is not null
         or new.withdrawn_at is not null then
        raise exception 'a request run by policy is approved by its first policy, for its own arguments, and not yet run'
          using errcode = 'insufficient_privilege';
      end if;
      new.decided_at := now();
      return new;
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
  if new.required_approvals is distinct from old.required_approvals
     or new.approver_groups is distinct from old.approver_groups
     or new.policy_version is distinct from old.policy_version or new.policy_ids is distinct from old.policy_ids
     or new.approved_by_policy is distinct from old.approved_by_policy then
    raise exception 'what the policy asked of approval % was fixed when it was requested', old.id
      using errcode = 'insufficient_privilege';
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
    -- Separation of duties by person (0071): person ids where both sides have one, else names' keys.
    if new.status = 'approved' and not proof.self_approval
       and public.bulkhead_proven_is_requester(old.requested_by_token_id) then
      raise exception 'approval % was requested by %, who may not approve it too', old.id,
        coalesce(public.bulkhead_token_owner(old.requested_by_token_id), proof.label) using errcode = 'check_violation';
    end if;
    if new.status = 'approved' and cardinality(old.approver_groups) > 0 then
      select * into voter from public.bulkhead_console_proven_voter();
      if not (coalesce(voter.groups, '{}') && old.approver_groups) then
        raise exception '% is in none of the groups the policy names for approval % (%)', proof.label, old.id,
          array_to_string(old.approver_groups, ', ') using errcode = 'insufficient_privilege';
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
    if new.status = 'approved' and old.required_approvals > 1 then
      votes := public.bulkhead_approval_vote(old.id, new.decision_event_id, new.decided_by);
      if votes < old.required_approvals then
        -- A vote, not yet the decision: the request waits for the next distinct person.
        new.status := 'pending';
        new.decided_by := null;
        new.decided_by_token_id := null;
        new.decided_arguments_hash := null;
        new.decision_event_id := null;
        new.decision_reason := null;
        return new;
      end if;
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
    if old.expires_at <= now() then return new; end if;
    raise exception 'approval % has not expired yet', old.id using errcode = 'check_violation';
  end if;
  if old.status = 'approved' and new.status in ('executed', 'failed') then
    if me <> old.server then
      raise exception 'only % records the outcome of its approvals', old.server using errcode = 'insufficient_privilege';
    end if;
    return new;
  end if;
  raise exception 'approval % cannot go from % to %', old.id, old.status, new.status using errcode = 'insufficient_privilege';
end $$;

-- A request run by policy is runnable as soon as it is filed.
create trigger bulkhead_approvals_runnable_by_policy
  after insert on bulkhead_approvals
  for each row when (new.status = 'approved')
  execute function bulkhead_approvals_notify();

-- `audit verify`: a request run by policy is decided by its call's event (`tools/call`, outcome
-- `approved`), not by an approver's.
create or replace function bulkhead_audit_undecided_approvals()
returns table (approval_id text, server text, status text, decided_at timestamptz, decided_by text)
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select a.id, a.server, a.status, a.decided_at, a.decided_by from public.bulkhead_approvals a
  where a.status in ('approved', 'executed', 'failed')
    and a.decided_at >= coalesce((select c.pruned_before from public.audit_prune_checkpoint c), '-infinity')
    and not exists (select 1 from public.audit_events e
      where e.approval_id = a.id and e.method = 'approvals/decide' and e.outcome = 'approved'
        and (a.decision_event_id is null or e.id = a.decision_event_id))
    and not (a.approved_by_policy and exists (select 1 from public.audit_events e
      where e.approval_id = a.id and e.method = 'tools/call' and e.outcome = 'approved'))
  order by a.decided_at, a.id
  limit 1000
$$;
