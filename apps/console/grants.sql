-- What the console may do in the database beyond the kit's grants (decisions, sessions, the OAuth
-- authorization server). Applied by `bulkhead db roles`; idempotent.
-- The consent page of an OAuth grant for a customer-bound server names the customer the grant is bound
-- to, chosen from a list: the console reads customers' ids and names, nothing else of them.
grant select (id, name) on customers to bulkhead_console;
drop policy if exists bh_console_names on customers;
create policy bh_console_names on customers for select to bulkhead_console using (true);
