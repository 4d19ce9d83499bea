-- Admin server: what is owed on each invoice.

-- Amount due = total − payments − credit notes (nothing on a void invoice); "overdue" is derived (open and past due_on), never stored,
-- so it cannot go stale. One definition of what is owed, for every server that shows it.
create view invoice_balances as
select
  i.number as invoice_number,
  i.customer_id,
  case when i.status = 'open' and i.due_on < current_date then 'overdue' else i.status end as status,
  i.issued_on,
  i.due_on,
  i.currency,
  i.total_cents,
  case when i.status = 'void' then 0 else
    i.total_cents
    - coalesce((select sum(p.amount_cents) from payments p where p.invoice_number = i.number), 0)
    - coalesce((select sum(n.amount_cents) from credit_notes n where n.invoice_number = i.number), 0)
  end::bigint as due_cents,
  i.sent_at
from invoices i;
