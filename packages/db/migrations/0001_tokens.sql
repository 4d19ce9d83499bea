-- Access tokens: one per client, bound to one server (its audience). Only a hash of the secret is kept.
create table bulkhead_tokens (
  id text primary key,
  kind text not null default 'mcp' check (kind in ('mcp', 'approver')),
  server text not null,
  label text not null,
  scopes text[] not null default '{}',
  customer_id text,
  secret_hash bytea not null,
  created_at timestamptz not null default now(),
  created_by text not null,
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz,
  rotated_from text references bulkhead_tokens (id)
);

create index bulkhead_tokens_server on bulkhead_tokens (server);

-- Per-token request counts in one-minute windows, shared by every replica.
create table bulkhead_rate_limits (
  token_id text not null,
  window_start timestamptz not null,
  count integer not null,
  primary key (token_id, window_start)
);
