-- Policy sets (issue 47): who must approve what, as Cedar text. A set is proposed by an operator and
-- takes effect only once another operator approves it; every version stays (the audit log holds each
-- proposal and decision, this table each text). The version is the SHA-256 of the text, computed here:
-- a proposal names no version of its own. Proposer and decider come from proofs (an operator's token
-- in full, or a console session's cookie value, 0045), never from a name given; the two are compared
-- as persons (0049), so Bob cannot approve Bob's proposal under another spelling.
--
-- The database cannot run Cedar: the CLI and the console validate a text against the servers' tools
-- before they propose or approve it, and a server that meets an active set it cannot load refuses
-- every call rather than run without policy.
create table bulkhead_policy_sets (
  version text primary key,
  text text not null check (length(text) between 1 and 200000),
  status text not null default 'proposed' check (status in ('proposed', 'active', 'retired', 'rejected')),
  proposed_by text not null,
  proposed_by_token text not null,
  proposed_at timestamptz not null default now(),
  decided_by text,
  decided_by_token text,
  decided_at timestamptz,
  reason text check (length(reason) <= 500),
  check (version = encode(sha256(convert_to(text, 'UTF8')), 'hex'))
);
create unique index bulkhead_policy_sets_one_active on bulkhead_policy_sets ((true)) where status = 'active';

-- Files `p_text` as proposed by the operator the proof names; returns its version. The same text again
-- while proposed or active is refused; one retired or rejected before is proposed anew.
create function bulkhead_policy_propose(p_proof text, p_text text) returns text
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  op record;
  v text := encode(sha256(convert_to(p_text, 'UTF8')), 'hex');
  was text;
begin
  select * into op from public.bulkhead_operator_proof(p_proof);
  select status into was from public.bulkhead_policy_sets where version = v for update;
  if was in ('proposed', 'active') then
    raise exception 'this policy set is already %: version %', was, v using errcode = 'unique_violation';
  end if;
  insert into public.bulkhead_policy_sets (version, text, proposed_by, proposed_by_token)
    values (v, p_text, coalesce(op.owner, op.label), op.token_id)
  on conflict (version) do update set status = 'proposed', proposed_by = excluded.proposed_by,
    proposed_by_token = excluded.proposed_by_token, proposed_at = now(),
    decided_by = null, decided_by_token = null, decided_at = null, reason = null;
  perform pg_notify('bulkhead_policy', v);
  return v;
end $$;
revoke all on function bulkhead_policy_propose(text, text) from public;

-- Approves (the set becomes the active one, the one before it retired) or rejects a proposed set, as
-- the operator the proof names, who is not its proposer.
create function bulkhead_policy_decide(p_proof text, p_version text, p_approve boolean, p_reason text)
returns table (version text, status text, proposed_by text, decided_by text)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  op record;
  s public.bulkhead_policy_sets;
  me text;
begin
  select * into op from public.bulkhead_operator_proof(p_proof);
  me := coalesce(op.owner, op.label);
  select * into s from public.bulkhead_policy_sets p where p.version = p_version for update;
  if not found then
    raise exception 'no policy set has version %', p_version using errcode = 'no_data_found';
  end if;
  if s.status <> 'proposed' then
    raise exception 'policy set % is %, not proposed: only a proposal is decided', p_version, s.status
      using errcode = 'check_violation';
  end if;
  if p_approve and (s.proposed_by_token = op.token_id or public.bulkhead_same_person(s.proposed_by, me)) then
    raise exception 'a policy set is approved by an operator other than its proposer (%)', s.proposed_by
      using errcode = 'insufficient_privilege';
  end if;
  if p_approve then
    update public.bulkhead_policy_sets p set status = 'retired' where p.status = 'active';
  end if;
  update public.bulkhead_policy_sets p
    set status = case when p_approve then 'active' else 'rejected' end,
      decided_by = me, decided_by_token = op.token_id, decided_at = now(), reason = p_reason
    where p.version = p_version;
  perform pg_notify('bulkhead_policy', p_version);
  return query select p.version, p.status, p.proposed_by, p.decided_by
    from public.bulkhead_policy_sets p where p.version = p_version;
end $$;
revoke all on function bulkhead_policy_decide(text, text, boolean, text) from public;

-- The active set, for the servers (which read nothing else of the table): none until one is approved.
create function bulkhead_active_policy() returns table (version text, text text)
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select p.version, p.text from public.bulkhead_policy_sets p where p.status = 'active'
$$;
revoke all on function bulkhead_active_policy() from public;
