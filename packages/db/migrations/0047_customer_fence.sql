-- The customer fence is a proof, not a setting (issue 42, item 5). The customer server's row policies
-- compared each row with `current_setting('bulkhead.customer_id', true)`, which the kit set from the
-- token, but which the customer login can set to any customer itself: after one `set_config` it read
-- every customer's invoices and payments, changed other customers' tickets and held locks on them.
--
-- Now the kit presents the token the call came with — its id and the SHA-256 of its secret, the same
-- proof `bulkhead_verify_token` checks, in `bulkhead.customer_token` (for the call's transaction, or
-- for a read lane's session) — and the policies ask this function for the customer, which it derives
-- from that token: known, its secret's hash matching, an MCP token of a server whose role the caller
-- has, neither revoked nor expired. Setting `bulkhead.customer_id` changes nothing any more; setting the
-- token setting helps only whoever already holds a live token's secret (or its stored hash, which no
-- deployable's role can read). Nothing is stored, so nothing is left behind for a later session or a
-- reused backend pid, and revoking a token fences its customer out at the next statement.
--
-- An approved call runs later, with no token presented: the executor names the approval it runs in
-- `bulkhead.customer_approval`, and the approval counts when it is this server's, approved and not
-- yet executed, and locked by this very transaction (the executor's claim, `for update`, sets the
-- row's xmax to the transaction's id). A gated server's login can lock its own approved rows too, so
-- it could read the customer of an approval from its approval until its execution; none other.
--
-- Policies call it as `(select public.bulkhead_fenced_customer())`: an uncorrelated subquery, computed
-- once per statement rather than once per row.
create function public.bulkhead_fenced_customer() returns text
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  presented text := coalesce(current_setting('bulkhead.customer_token', true), '');
  given_id text := split_part(presented, ':', 1);
  given_hash text := split_part(presented, ':', 2);
  approval text := coalesce(current_setting('bulkhead.customer_approval', true), '');
  -- The calling role as `bulkhead_caller()` names it. The audience is checked as membership in the
  -- token's (or approval's) server's role, in the same query, rather than through
  -- `bulkhead_deployable_of`: those helpers are SQL functions with a search path of their own, planned
  -- afresh at every call, and this runs for every statement of every customer call (measured: about
  -- half its cost).
  caller name := coalesce(nullif(current_setting('role'), 'none'), session_user);
  customer text;
begin
  if given_id <> '' then
    select t.customer_id into customer
    from public.bulkhead_tokens t join public.bulkhead_deployables d on d.name = t.server
    where t.id = given_id and encode(t.secret_hash, 'hex') = given_hash and t.kind = 'mcp'
      and t.revoked_at is null and (t.expires_at is null or t.expires_at > now())
      and pg_has_role(caller, d.role, 'MEMBER');
    return customer;
  end if;
  if approval <> '' then
    select a.customer_id into customer
    from public.bulkhead_approvals a join public.bulkhead_deployables d on d.name = a.server
    where a.id = approval and a.status = 'approved' and a.xmax = pg_current_xact_id_if_assigned()::xid
      and pg_has_role(caller, d.role, 'MEMBER');
  end if;
  return customer;
end $$;
revoke all on function public.bulkhead_fenced_customer() from public;
