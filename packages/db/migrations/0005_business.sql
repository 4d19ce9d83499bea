-- The business the servers work with: customers, billing, helpdesk. Amounts are integer cents.
create table customers (
  id text primary key check (id ~ '^C-\d{4}$'),
  name text not null,
  email text not null,
  phone text,
  street text,
  postal_code text,
  city text,
  country text not null default 'DE' check (country ~ '^[A-Z]{2}$'),
  language text not null default 'en' check (language in ('en', 'de')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create index customers_name on customers (lower(name));
create index customers_email on customers (lower(email));

-- open: issued and not settled (overdue is derived: open and past due_on); paid; void; draft: not yet sent.
create table invoices (
  number text primary key check (number ~ '^R-\d{4}-\d{4}$'),
  customer_id text not null references customers (id),
  status text not null check (status in ('draft', 'open', 'paid', 'void')),
  issued_on date not null,
  due_on date not null,
  currency text not null default 'EUR' check (currency ~ '^[A-Z]{3}$'),
  total_cents bigint not null check (total_cents >= 0),
  sent_at timestamptz,
  paid_at timestamptz,
  check (due_on >= issued_on)
);

create index invoices_customer on invoices (customer_id, issued_on desc);
create index invoices_status_due on invoices (status, due_on);

create table invoice_lines (
  invoice_number text not null references invoices (number) on delete cascade,
  line_no integer not null check (line_no > 0),
  description text not null,
  quantity numeric(10, 2) not null check (quantity > 0),
  unit_price_cents bigint not null,
  amount_cents bigint not null,
  primary key (invoice_number, line_no)
);

create table payments (
  id text primary key check (id ~ '^P-\d{5}$'),
  invoice_number text not null references invoices (number),
  customer_id text not null references customers (id),
  amount_cents bigint not null check (amount_cents > 0),
  received_on date not null,
  method text not null check (method in ('bank_transfer', 'card', 'direct_debit'))
);

create index payments_invoice on payments (invoice_number);

create table credit_notes (
  number text primary key check (number ~ '^CN-\d{4}-\d{4}$'),
  invoice_number text not null references invoices (number),
  customer_id text not null references customers (id),
  amount_cents bigint not null check (amount_cents > 0),
  reason text not null,
  issued_at timestamptz not null default now(),
  approval_id text
);

create index credit_notes_invoice on credit_notes (invoice_number);

create table tickets (
  key text primary key check (key ~ '^T-\d{4}$'),
  customer_id text not null references customers (id),
  subject text not null,
  category text check (category in ('question', 'incident', 'billing', 'legal', 'spam')),
  status text not null default 'open' check (status in ('open', 'pending', 'escalated', 'resolved', 'closed')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  escalated_at timestamptz,
  escalation_reason text
);

create index tickets_customer on tickets (customer_id, created_at desc);
create index tickets_status on tickets (status, created_at desc);

create table ticket_messages (
  id bigint generated always as identity primary key,
  ticket_key text not null references tickets (key) on delete cascade,
  author_kind text not null check (author_kind in ('customer', 'agent', 'system')),
  author_name text not null,
  body text not null,
  created_at timestamptz not null default now()
);

create index ticket_messages_ticket on ticket_messages (ticket_key, id);

-- Numbers for new tickets and credit notes, handed out without gaps under concurrency.
create sequence ticket_key_seq start 5001;
create sequence credit_note_seq start 1;
