-- The sealer trusts nothing another session can change (issue 31).
--
-- Election: one row, leased for a few seconds and renewed by the sealer that holds it, taken with an
-- UPDATE that skips a locked row. The sealer was elected by a session advisory lock; since 0038 PUBLIC
-- may not take advisory locks, and any role that could take the same number could have kept every
-- sealer out. Only the sealer's role (and the owner) may touch this row; a sealer that dies leaves a
-- lease that expires.
create table audit_sealer_lease (
  id boolean primary key default true check (id),
  holder text,
  expires_at timestamptz not null default '-infinity'
);
insert into audit_sealer_lease default values;

-- What a seal records beyond 0012, each covered by its MAC when present:
--   open_ranges  numbers of its range that had no committed event when it was sealed while writers of
--                the log were still running ([[from, to], …]): their events, once committed, are sealed
--                by the seal that closes this one (a later seal, listing them among its `seqs`);
--   waiting_for  those writers' transaction ids (xid8 as text): the seal is closed once all have ended;
--   pending      the seals whose open ranges are not closed yet, as of this seal (itself included);
--   made_before  the highest seal number made before this one, as the sealer found it in
--                audit_seals_made: a number at or above this seal's own means a seal with this number
--                was made before and has been deleted, and the range sealed again.
alter table audit_seals
  add column open_ranges jsonb,
  add column waiting_for text[],
  add column pending bigint[],
  add column made_before bigint;

-- The highest seal number ever made, moved forward by the sealer after each seal commits. A sequence,
-- so that it is not rolled back with a transaction; verify compares it with the newest seal.
create sequence audit_seals_made as bigint minvalue 0 start 0;
select pg_catalog.setval('public.audit_seals_made'::pg_catalog.regclass,
  coalesce((select max(seal_no) from public.audit_seals), (select seal_no from public.audit_prune_checkpoint), 0), true);

-- Approvals that passed the gate (approved, and then executed or failed) with no `approved` decision
-- event in the log: the one named by `decision_event_id` (0038), or for older decisions any decision
-- event of the approval. Approvals decided before the prune checkpoint's cut are left out (their events
-- were pruned with the seals). A definer function, so that verify running as the sealer, which has no
-- privilege on bulkhead_approvals, can ask exactly this and nothing more.
create function bulkhead_audit_undecided_approvals()
returns table (approval_id text, server text, status text, decided_at timestamptz, decided_by text)
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select a.id, a.server, a.status, a.decided_at, a.decided_by from public.bulkhead_approvals a
  where a.status in ('approved', 'executed', 'failed')
    and a.decided_at >= coalesce((select c.pruned_before from public.audit_prune_checkpoint c), '-infinity')
    and not exists (select 1 from public.audit_events e
      where e.approval_id = a.id and e.method = 'approvals/decide' and e.outcome = 'approved'
        and (a.decision_event_id is null or e.id = a.decision_event_id))
  order by a.decided_at, a.id
  limit 1000
$$;
revoke all on function bulkhead_audit_undecided_approvals() from public;
