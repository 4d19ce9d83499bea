-- Approval gates. A gated tool call is stored here and waits for a person; once approved, the server
-- that owns the tool runs it exactly once with exactly these arguments.
create table bulkhead_approvals (
  id text primary key check (id ~ '^ap_[a-z2-9]{12}$'),
  server text not null,
  tool text not null,
  -- What runs, exactly; never shown as is (secret fields may be in it).
  arguments jsonb not null,
  -- What people see: the same arguments with secret fields replaced by their hash.
  arguments_redacted jsonb not null,
  -- sha256 over the canonical JSON of `arguments`; checked before the action runs.
  arguments_hash text not null check (arguments_hash ~ '^[0-9a-f]{64}$'),
  preview text not null,
  status text not null default 'pending'
    check (status in ('pending', 'approved', 'rejected', 'expired', 'executed', 'failed')),
  -- The last status whose audit event is in the log. The executor only runs an approval whose
  -- `approved` event is written, so the log always tells the story in order.
  audited_status text,
  requested_at timestamptz not null default now(),
  expires_at timestamptz not null,
  request_id text not null,
  requested_by_token_id text,
  requested_by_label text,
  requested_scopes text[] not null default '{}',
  customer_id text,
  decided_at timestamptz,
  decided_by text,
  decided_by_token_id text,
  decision_reason text,
  executed_at timestamptz,
  -- The process that ran it (host:pid:random), to show that two replicas never both did.
  executed_by text,
  duration_ms integer,
  result jsonb,
  error text,
  failure text check (failure in ('tool_error', 'timeout', 'internal_error', 'refused')),
  check ((status in ('pending', 'expired')) = (decided_at is null))
);

create index bulkhead_approvals_status on bulkhead_approvals (status, requested_at desc);
create index bulkhead_approvals_server_status on bulkhead_approvals (server, status);

-- An approval becoming runnable (approved and its decision audited) is announced so that the owning
-- server reacts within a second; the payload is the server name.
create function bulkhead_approvals_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('bulkhead_approvals', new.server);
  return null;
end $$;

create trigger bulkhead_approvals_runnable
  after update of status, audited_status on bulkhead_approvals
  for each row when (new.status = 'approved' and new.audited_status = 'approved')
  execute function bulkhead_approvals_notify();

-- Effects outside the database (notifications, e-mails). A row is written in the same transaction as
-- the change it belongs to and delivered afterwards by the owning server; its id is the idempotency
-- key a receiver can use to drop a repeated delivery.
create table bulkhead_outbox (
  id bigint generated always as identity primary key,
  server text not null,
  approval_id text references bulkhead_approvals (id),
  kind text not null check (kind ~ '^[a-z][a-z0-9_]{0,63}$'),
  payload jsonb not null,
  created_at timestamptz not null default now(),
  status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  delivered_at timestamptz,
  last_error text
);

create index bulkhead_outbox_due on bulkhead_outbox (server, next_attempt_at) where status = 'pending';
create index bulkhead_outbox_approval on bulkhead_outbox (approval_id);

create function bulkhead_outbox_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('bulkhead_outbox', new.server);
  return null;
end $$;

create trigger bulkhead_outbox_added
  after insert on bulkhead_outbox
  for each row execute function bulkhead_outbox_notify();

-- Every delivery attempt, successful or not.
create table bulkhead_outbox_attempts (
  id bigint generated always as identity primary key,
  outbox_id bigint not null references bulkhead_outbox (id),
  attempt integer not null,
  at timestamptz not null default now(),
  ok boolean not null,
  status_code integer,
  error text,
  duration_ms integer not null
);

create index bulkhead_outbox_attempts_outbox on bulkhead_outbox_attempts (outbox_id, attempt);

-- Sessions of the approvers' console. Only a hash of the session id is kept; a session dies with its token.
create table bulkhead_console_sessions (
  id_hash bytea primary key,
  token_id text not null references bulkhead_tokens (id),
  csrf text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  last_seen_at timestamptz not null default now()
);

create index bulkhead_console_sessions_token on bulkhead_console_sessions (token_id);
