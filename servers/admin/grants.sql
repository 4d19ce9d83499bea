-- What the admin server may do in the database, beyond the kit's grants (audit append, token check,
-- approvals and outbox of its own gated tools). Applied by `bulkhead db roles`; idempotent.
-- The business tables are fenced by row-level security; admin works for every customer.
grant select on customers, invoices, invoice_lines, payments, credit_notes, tickets, ticket_messages, invoice_balances
  to bulkhead_admin;
grant update (email, phone, street, postal_code, city, updated_at) on customers to bulkhead_admin;
grant update (status, sent_at) on invoices to bulkhead_admin;
grant insert on credit_notes to bulkhead_admin;
grant usage on sequence credit_note_seq to bulkhead_admin;
grant update (category, status, updated_at, escalated_at, escalation_reason) on tickets to bulkhead_admin;
grant insert (ticket_key, author_kind, author_name, body) on ticket_messages to bulkhead_admin;

drop policy if exists bh_admin_all on customers;
create policy bh_admin_all on customers to bulkhead_admin using (true) with check (true);
drop policy if exists bh_admin_all on invoices;
create policy bh_admin_all on invoices to bulkhead_admin using (true) with check (true);
drop policy if exists bh_admin_all on invoice_lines;
create policy bh_admin_all on invoice_lines to bulkhead_admin using (true);
drop policy if exists bh_admin_all on payments;
create policy bh_admin_all on payments to bulkhead_admin using (true);
drop policy if exists bh_admin_all on credit_notes;
create policy bh_admin_all on credit_notes to bulkhead_admin using (true) with check (true);
drop policy if exists bh_admin_all on tickets;
create policy bh_admin_all on tickets to bulkhead_admin using (true) with check (true);
drop policy if exists bh_admin_all on ticket_messages;
create policy bh_admin_all on ticket_messages to bulkhead_admin using (true) with check (author_kind in ('agent', 'system'));
