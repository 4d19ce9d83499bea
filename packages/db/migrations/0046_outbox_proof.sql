-- Effects only from an executing approval (issue 42, item 2), and delivery keys nobody can guess
-- (issue 43, item 2).
--
-- Until now a gated server's login could queue any e-mail, webhook or upstream effect by inserting an
-- outbox row with no approval, or with the id of one that ran long ago, and its process delivered it.
-- The database now takes a row only as part of the proof it can check itself: the approval of the same
-- server becomes `executed` in the very transaction that queues the row (the executor's), or, for the
-- one notification of a filing, the approval is filed (pending) in that transaction.

-- The key a receiver drops a repeated delivery by, and the text by which a check before a retry finds
-- what the effect wrote: random per row and made by the database, never the row's id (a sequence anyone
-- can predict, and so plant in a text the check would later find). A row already tried keeps the key it
-- was sent with, so that its retry still finds what its first attempt made.
alter table bulkhead_outbox add column idempotency_key text;
update bulkhead_outbox set idempotency_key = case when status = 'pending' and attempts = 0
  then 'bulkhead-outbox-' || replace(pg_catalog.gen_random_uuid()::text, '-', '')
  else 'bulkhead-outbox-' || id end;
alter table bulkhead_outbox
  alter column idempotency_key set not null,
  add constraint bulkhead_outbox_key_shape
    check (idempotency_key ~ '^bulkhead-outbox-[0-9a-f]{32}$' or idempotency_key = 'bulkhead-outbox-' || id),
  add constraint bulkhead_outbox_key_unique unique (idempotency_key);

-- A filing is announced once.
create unique index bulkhead_outbox_one_notification on bulkhead_outbox (approval_id)
  where kind = 'approval_webhook';

-- Rows belong to the server that queues them, and their key is the database's (whatever the insert says).
create or replace function bulkhead_outbox_guard() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
begin
  if not public.bulkhead_role_is_owner(current_user) and new.server is distinct from public.bulkhead_current_deployable() then
    raise exception '% may queue deliveries only for itself', current_user using errcode = 'insufficient_privilege';
  end if;
  new.idempotency_key := 'bulkhead-outbox-' || replace(pg_catalog.gen_random_uuid()::text, '-', '');
  return new;
end $$;
revoke all on function bulkhead_outbox_guard() from public;

-- Checked at commit (the executor queues effects while the handler runs, and marks the approval executed
-- after it): the row's approval is one of the same server, and this transaction wrote it last — as
-- `executed` (a server may move its approval only from `approved` to `executed` or `failed`, and a final
-- approval never again), or as a pending filing for its notification. The approval row is compared with
-- the transaction's own id, or with the row's (both written in one savepoint). Setting the constraint
-- immediate only checks earlier; the schema owner (migrations, the CLI, tests' setup) is trusted.
create function bulkhead_outbox_proof() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
declare
  a record;
  queued_by xid;
begin
  if public.bulkhead_role_is_owner(current_user) then return null; end if;
  if new.approval_id is null then
    raise exception 'an outbox row is queued by the execution of an approval; this one names none'
      using errcode = 'insufficient_privilege';
  end if;
  select ap.status, ap.server, ap.xmin as written_by into a
    from public.bulkhead_approvals ap where ap.id = new.approval_id;
  if not found or a.server is distinct from new.server then
    raise exception 'approval % is no approval of %', new.approval_id, new.server
      using errcode = 'insufficient_privilege';
  end if;
  select o.xmin into queued_by from public.bulkhead_outbox o where o.id = new.id;
  if new.kind = 'approval_webhook' then
    if a.status <> 'pending' or (a.written_by is distinct from pg_current_xact_id()::xid
        and a.written_by is distinct from queued_by) then
      raise exception 'the notification of approval % is queued only in the transaction that files it', new.approval_id
        using errcode = 'insufficient_privilege';
    end if;
    return null;
  end if;
  if a.status <> 'executed' or (a.written_by is distinct from pg_current_xact_id()::xid
      and a.written_by is distinct from queued_by) then
    raise exception 'approval % is not being executed in this transaction (it is %): its effects were queued when it ran, or it has not run yet',
      new.approval_id, a.status using errcode = 'insufficient_privilege';
  end if;
  return null;
end $$;
revoke all on function bulkhead_outbox_proof() from public;

create constraint trigger bulkhead_outbox_proof
  after insert on bulkhead_outbox
  deferrable initially deferred
  for each row execute function bulkhead_outbox_proof();

-- A row delivered or given up stays so: a server's login cannot send an approved e-mail a second time by
-- setting it pending again (the owner may, for an operator's retry).
create function bulkhead_outbox_settled() returns trigger language plpgsql
set search_path = pg_catalog, public, pg_temp as $$
begin
  if old.status <> 'pending' and not public.bulkhead_role_is_owner(current_user) then
    raise exception 'outbox row % is % and stays so', old.id, old.status using errcode = 'insufficient_privilege';
  end if;
  return new;
end $$;
revoke all on function bulkhead_outbox_settled() from public;

create trigger bulkhead_outbox_settled
  before update on bulkhead_outbox
  for each row execute function bulkhead_outbox_settled();
