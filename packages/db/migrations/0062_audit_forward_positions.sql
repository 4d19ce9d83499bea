-- A stream into the SIEM (issue 49): the sealer's process forwards sealed events to each destination
-- (syslog over TLS, an OCSF file), in the order they were sealed, and keeps here, per destination, how
-- far the destination has acknowledged them. Moved forward only after a destination acknowledged a
-- batch, so that a restart of Bulkhead or of the receiver loses nothing and sends again at most the
-- unacknowledged tail. Only the sealer's role reads and writes it (`bulkhead db roles`).
create table public.audit_forward_positions (
  -- `syslog:tls://host:port` or `ocsf:/path/of/file.jsonl`.
  destination text primary key check (char_length(destination) between 1 and 1000),
  -- Every event of the seals below seal_no is acknowledged, and the first `sent` events that seal lists.
  seal_no bigint not null default 0 check (seal_no >= 0),
  sent integer not null default 0 check (sent >= 0),
  -- Events acknowledged by this destination so far.
  forwarded bigint not null default 0 check (forwarded >= 0),
  -- The forwarder that moves this destination now: one at a time, as the sealer's lease, so that two
  -- sealer processes do not both send every event.
  holder text,
  expires_at timestamptz not null default '-infinity',
  updated_at timestamptz not null default now()
);

-- Events sealed but not yet acknowledged, per destination, for `/metrics`
-- (`bulkhead_audit_forward_lag_events`): a definer function, so that a server's role can report the lag
-- without any privilege on the positions or the seals.
create function bulkhead_audit_forward_lag() returns table (destination text, lag bigint, oldest_at timestamptz)
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select p.destination,
    coalesce((select sum(s.events) from public.audit_seals s where s.seal_no > p.seal_no), 0)::bigint
      + coalesce((select greatest(s.events - p.sent, 0) from public.audit_seals s where s.seal_no = p.seal_no), 0),
    (select min(s.sealed_at) from public.audit_seals s
      where (s.seal_no > p.seal_no and s.events > 0) or (s.seal_no = p.seal_no and s.events > p.sent))
  from public.audit_forward_positions p
  order by p.destination
$$;
revoke all on function bulkhead_audit_forward_lag() from public;
