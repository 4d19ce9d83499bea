-- The audit log, sealed. Appending an event is one insert that takes no lock shared between processes:
-- the database numbers it from a sequence and stamps its time, its role and (for server roles) its
-- server. Integrity comes from seals made off the request path by one sealer holding a key that no
-- server role has: each seal covers a contiguous range of sequence numbers, carries a keyed digest of
-- every event in it, per-server counts, and a MAC chained to the previous seal.

alter table audit_events drop constraint audit_events_server_chain_seq_key;
alter table audit_events drop column chain_seq, drop column prev_hash, drop column hash;
alter table audit_events alter column seq drop identity;
create sequence audit_events_seq as bigint cache 1 owned by audit_events.seq;
select setval('audit_events_seq', coalesce((select max(seq) from audit_events), 0) + 1, false);
alter table audit_events add column db_role name not null default current_user;
alter table audit_events alter column id set default gen_random_uuid();

-- Stamps what no writer may choose. The transaction takes its id before its number, so that the
-- sealer, having read the sequence and then a snapshot, knows every number up to what it read belongs
-- to a transaction that is finished or listed in that snapshot.
create function audit_events_stamp() returns trigger language plpgsql
set search_path = public, pg_catalog as $$
declare
  me text;
begin
  perform pg_current_xact_id();
  new.seq := nextval('audit_events_seq');
  new.at := clock_timestamp();
  new.db_role := current_user;
  if not bulkhead_role_is_owner(current_user) then
    me := bulkhead_current_deployable();
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

create trigger audit_events_stamp
  before insert on audit_events
  for each row execute function audit_events_stamp();

alter table audit_events enable row level security;

drop table audit_checkpoints;

create table audit_seals (
  seal_no bigint primary key check (seal_no > 0),
  sealed_at timestamptz not null,
  -- The range of sequence numbers this seal closes: every event in it that exists now was committed
  -- when it was sealed; a number with no event was never committed.
  first_seq bigint not null,
  last_seq bigint not null,
  events integer not null,
  -- The sequence numbers of the events in the range, and for each an 8-byte keyed digest of the row.
  seqs bigint[] not null,
  digests bytea not null,
  -- Events per server in this seal, and in every seal up to this one.
  counts jsonb not null,
  totals jsonb not null,
  prev_mac text not null,
  mac text not null,
  check (last_seq >= first_seq - 1),
  check (octet_length(digests) = 8 * events)
);

create trigger audit_seals_append_only_row
  before update or delete on audit_seals
  for each row execute function audit_events_refuse_change();

create trigger audit_seals_append_only_truncate
  before truncate on audit_seals
  for each statement execute function audit_events_refuse_change();

-- Where `audit prune` cut the sealed log: the last removed seal, so that verify continues from it.
-- Signed with the key, so that a forged cut (to hide removed events) is caught.
create table audit_prune_checkpoint (
  id boolean primary key default true check (id),
  seal_no bigint not null,
  last_seq bigint not null,
  mac text not null,
  totals jsonb not null,
  pruned_before timestamptz not null,
  removed bigint not null,
  signature text not null,
  created_at timestamptz not null default now()
);
