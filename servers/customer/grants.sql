-- What the customer server may do in the database, beyond the kit's grants (audit append, token
-- check). Applied by `bulkhead db roles`; idempotent.
-- Every row is fenced by row-level security keyed on the customer of the token the call presented,
-- as the database verifies it (`bulkhead_fenced_customer('customer')`, migrations 0047 and 0067: a live
-- token of this server, the customer server, whose secret's hash the call presents): under this role a query
-- sees only that customer's rows, and none without a live token of this server, so a query that
-- forgets its `where customer_id = …` still cannot read another customer, and neither can the login
-- itself by changing a setting. `(select …)` computes the customer once per statement, not per row.
-- Drafts are not yet the customer's to see.
grant select (id, name, language) on customers to bulkhead_customer;
grant select on invoices, invoice_lines, payments, credit_notes, tickets, ticket_messages, invoice_balances
  to bulkhead_customer;
grant insert (key, customer_id, subject, category, status) on tickets to bulkhead_customer;
grant update (status, updated_at) on tickets to bulkhead_customer;
grant insert (ticket_key, author_kind, author_name, body, created_at) on ticket_messages to bulkhead_customer;
grant usage on sequence ticket_key_seq to bulkhead_customer;

drop policy if exists bh_customer_own on customers;
create policy bh_customer_own on customers for select to bulkhead_customer
  using (id = (select bulkhead_fenced_customer('customer')));
drop policy if exists bh_customer_own on invoices;
create policy bh_customer_own on invoices for select to bulkhead_customer
  using (customer_id = (select bulkhead_fenced_customer('customer')) and status <> 'draft');
drop policy if exists bh_customer_own on invoice_lines;
create policy bh_customer_own on invoice_lines for select to bulkhead_customer
  using (exists (select 1 from invoices i where i.number = invoice_number));
drop policy if exists bh_customer_own on payments;
create policy bh_customer_own on payments for select to bulkhead_customer
  using (customer_id = (select bulkhead_fenced_customer('customer')));
-- A credit note is seen with its invoice only (not that of a draft, nor of another customer's invoice),
-- and only when it names the invoice's customer: the invoice's own policy fences that customer, so the
-- customer is proved once for the pair, not twice (each proof is a token lookup).
-- `offset 0` keeps the check a lookup of that one invoice: without it the planner hashes every invoice
-- the customer sees, twice per balance query (due is summed twice): measured in a PL/pgSQL loop, the
-- balance query took 160 µs under these policies with the hash, 135 µs without, 116 µs as the owner.
drop policy if exists bh_customer_own on credit_notes;
create policy bh_customer_own on credit_notes for select to bulkhead_customer
  using (exists (select 1 from invoices i where i.number = invoice_number and i.customer_id = credit_notes.customer_id
    offset 0));
drop policy if exists bh_customer_own on tickets;
create policy bh_customer_own on tickets to bulkhead_customer
  using (customer_id = (select bulkhead_fenced_customer('customer')))
  with check (customer_id = (select bulkhead_fenced_customer('customer')));
drop policy if exists bh_customer_own on ticket_messages;
create policy bh_customer_own on ticket_messages to bulkhead_customer
  using (exists (select 1 from tickets t where t.key = ticket_key))
  with check (author_kind = 'customer' and exists (select 1 from tickets t where t.key = ticket_key));
