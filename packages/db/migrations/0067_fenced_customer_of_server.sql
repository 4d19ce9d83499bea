-- The customer fence at 5 µs an answer instead of 8 (issue 42). A row policy asks for the customer of the
-- call's token once per table a statement reads (an InitPlan a table: three for a balance), and
-- `bulkhead_fenced_customer()` (0047) spent half of each answer on the audience: a join to
-- `bulkhead_deployables` and a role-membership check, which settle which server's tokens the caller
-- may present. Measured in a loop on PostgreSQL 15: 8.2 µs an answer, 5.2 µs without them.
--
-- A policy already says which server it fences: it is written by the schema owner, for that server's
-- role alone (`create policy … to bulkhead_customer`). So it names that server here, and the function
-- accepts only that server's tokens (or approvals): `(select bulkhead_fenced_customer('customer'))`.
-- The proof is the same as 0047's: a live MCP token whose secret's hash the caller presents in
-- `bulkhead.customer_token` (or, for an approved call, an approval of that server its transaction has
-- claimed). No login can change the server a policy names; calling the function itself, a login learns
-- only the customer of a token whose secret it holds already. 0047's function stays for the policies
-- written for it.
create function public.bulkhead_fenced_customer(p_server text) returns text
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  presented text := coalesce(current_setting('bulkhead.customer_token', true), '');
  given_id text := split_part(presented, ':', 1);
  given_hash text := split_part(presented, ':', 2);
  approval text;
  customer text;
begin
  if given_id <> '' then
    select t.customer_id into customer
    from public.bulkhead_tokens t
    where t.id = given_id and encode(t.secret_hash, 'hex') = given_hash and t.kind = 'mcp'
      and t.server = p_server and t.revoked_at is null and (t.expires_at is null or t.expires_at > now());
    return customer;
  end if;
  approval := coalesce(current_setting('bulkhead.customer_approval', true), '');
  if approval <> '' then
    select a.customer_id into customer
    from public.bulkhead_approvals a
    where a.id = approval and a.server = p_server and a.status = 'approved'
      and a.xmax = pg_current_xact_id_if_assigned()::xid;
  end if;
  return customer;
end $$;
revoke all on function public.bulkhead_fenced_customer(text) from public;
