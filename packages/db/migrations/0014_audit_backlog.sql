-- How far the seal lags behind the log, for every deployable's /metrics: a count and an age, nothing
-- of the events themselves (server roles may not read the log they write to).
create function bulkhead_audit_backlog() returns table (unsealed bigint, oldest_at timestamptz)
language sql stable security definer set search_path = public, pg_catalog as $$
  select count(*), min(at) from audit_events
  where seq > coalesce((select max(last_seq) from audit_seals), (select last_seq from audit_prune_checkpoint), 0)
$$;
revoke all on function bulkhead_audit_backlog() from public;
