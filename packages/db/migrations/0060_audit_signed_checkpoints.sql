-- Signed checkpoints (issue 49): besides its keyed seal, the sealer signs each seal with an Ed25519
-- key (BULKHEAD_AUDIT_SIGNING_KEY_FILE), so that anyone holding only the public key can check the log:
-- an auditor, a regulator, a customer handed an export. A checkpoint lists the events its seal sealed
-- and, for each, the SHA-256 of its sealed body (the same body the seal's keyed digest covers), and is
-- chained to the checkpoint before it by that one's hash. Written in the seal's own transaction;
-- append-only like audit_seals (only `audit prune`, as the owner, removes the oldest with their seals).
create table public.audit_signed_checkpoints (
  seal_no bigint primary key check (seal_no > 0),
  sealed_at timestamptz not null,
  first_seq bigint not null,
  last_seq bigint not null,
  seqs bigint[] not null,
  -- 32 bytes a listed event: SHA-256 of its sealed body.
  digests bytea not null,
  counts jsonb not null,
  open_ranges jsonb,
  pending bigint[] not null,
  body_format smallint not null,
  -- The seal of the checkpoint before this one (null for the first ever), and that checkpoint's hash.
  prev_seal_no bigint,
  prev_hash text not null,
  -- SHA-256 of the signing public key (DER SPKI), hex; and the Ed25519 signature, base64.
  key_id text not null,
  signature text not null,
  check (last_seq >= first_seq - 1),
  check (octet_length(digests) = 32 * cardinality(seqs))
);

create trigger audit_signed_checkpoints_append_only_row
  before update or delete on public.audit_signed_checkpoints
  for each row execute function public.audit_events_refuse_change();

create trigger audit_signed_checkpoints_append_only_truncate
  before truncate on public.audit_signed_checkpoints
  for each statement execute function public.audit_events_refuse_change();
