-- Approvals as MCP tasks. A gated call made as a task (by a client that asks for one) is the same
-- approval request, marked `as_task`; its task id is the approval id, and its task status follows the
-- approval. A client may withdraw its own request through `tasks/cancel` while no one has decided it:
-- the new final status `withdrawn`, which only the server that owns the approval may set, and only
-- from `pending` before the expiry. An approver can no longer decide a withdrawn request.
alter table bulkhead_approvals add column as_task boolean not null default false;
alter table bulkhead_approvals add column withdrawn_at timestamptz;

alter table bulkhead_approvals drop constraint bulkhead_approvals_status_check;
alter table bulkhead_approvals add constraint bulkhead_approvals_status_check
  check (status in ('pending', 'approved', 'rejected', 'expired', 'executed', 'failed', 'withdrawn'));
alter table bulkhead_approvals drop constraint bulkhead_approvals_check;
alter table bulkhead_approvals add constraint bulkhead_approvals_check
  check ((status in ('pending', 'expired', 'withdrawn')) = (decided_at is null));
alter table bulkhead_approvals add constraint bulkhead_approvals_withdrawn_check
  check ((status = 'withdrawn') = (withdrawn_at is not null));

-- A token's tasks, newest first (`tasks/list` of 2025-11-25 pages through them).
create index bulkhead_approvals_tasks on bulkhead_approvals (requested_by_token_id, requested_at desc, id)
  where as_task;

create or replace function bulkhead_approvals_guard() returns trigger language plpgsql
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
    if new.status = 'approved' and new.decided_arguments_hash is distinct from old.arguments_hash then
      raise exception 'the approved arguments hash differs from the stored one' using errcode = 'check_violation';
    end if;
    if old.expires_at <= now() then
      raise exception 'approval % has expired', old.id using errcode = 'check_violation';
    end if;
    new.decided_at := now();
    return new;
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
