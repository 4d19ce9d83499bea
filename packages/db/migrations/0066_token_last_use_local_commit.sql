-- The last-use note a token check writes (at most once a minute per token) is a hint for operators,
-- not a record: its commit does not wait for a synchronous standby (synchronous_commit = local for
-- the check's own transaction). A failover's new primary in synchronous mode waits for a standby
-- that is still reconnecting; a read call whose token check fell on that minute's note waited with
-- it, past its time limit, since the check runs before the call (test/scale/failover.test.ts).
create or replace function bulkhead_verify_token(p_id text, p_secret_hash bytea, p_audience text, p_kind text)
returns table (status text, token_id text, label text, server text, kind text, owner text, scopes text[],
  customer_id text, expires_at timestamptz)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  caller name := public.bulkhead_caller();
  audience text := case when public.bulkhead_role_is_owner(caller) then p_audience else public.bulkhead_deployable_of(caller) end;
  t public.bulkhead_tokens;
begin
  if audience is null or audience is distinct from p_audience then
    raise exception 'role % may check tokens only for its own server', caller using errcode = 'insufficient_privilege';
  end if;
  select * into t from public.bulkhead_tokens where id = p_id;
  if not found or t.secret_hash <> p_secret_hash then
    return query select 'unknown'::text, null::text, null::text, null::text, null::text, null::text, null::text[],
      null::text, null::timestamptz;
    return;
  end if;
  if t.server <> audience or t.kind <> p_kind then
    return query select 'wrong_server'::text, t.id, t.label, null::text, null::text, null::text, null::text[],
      null::text, null::timestamptz;
    return;
  end if;
  if t.revoked_at is not null or (t.expires_at is not null and t.expires_at <= now()) then
    return query select case when t.revoked_at is not null then 'revoked' else 'expired' end, t.id, t.label,
      null::text, null::text, null::text, null::text[], null::text, null::timestamptz;
    return;
  end if;
  -- Local to this transaction: the setting holds until its COMMIT (the function's SET clause names another).
  perform pg_catalog.set_config('synchronous_commit', 'local', true);
  update public.bulkhead_tokens set last_used_at = now()
    where id = t.id and (last_used_at is null or last_used_at < now() - interval '1 minute');
  return query select 'ok'::text, t.id, t.label, t.server, t.kind, t.owner, t.scopes, t.customer_id, t.expires_at;
end $$;
