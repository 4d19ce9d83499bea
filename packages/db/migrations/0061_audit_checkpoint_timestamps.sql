-- Trusted time for signed checkpoints (issue 49): an RFC 3161 timestamp token from a time-stamping
-- authority (BULKHEAD_AUDIT_TSA_URL) over a checkpoint's hash, asked for by the sealer after the seal
-- commits (a slow TSA never holds a seal open). A token proves the checkpoint existed at its time, to
-- anyone holding the TSA's certificate. Append-only like the checkpoints; `audit prune` removes the
-- oldest with them.
create table public.audit_checkpoint_timestamps (
  seal_no bigint primary key check (seal_no > 0),
  -- The TimeStampToken (a CMS SignedData), DER.
  token bytea not null,
  stamped_at timestamptz not null default now()
);

create trigger audit_checkpoint_timestamps_append_only_row
  before update or delete on public.audit_checkpoint_timestamps
  for each row execute function public.audit_events_refuse_change();

create trigger audit_checkpoint_timestamps_append_only_truncate
  before truncate on public.audit_checkpoint_timestamps
  for each statement execute function public.audit_events_refuse_change();
