-- The e-mails the local mail catcher of `pnpm start` received (issue 25): what an approved action
-- really sent, as an SMTP server got it, for the console's "Sent mail" page. Written by the catcher
-- (under the schema owner, in the `start` process); only the console may read it. In production,
-- where a real SMTP server receives the e-mails, the table stays empty.
create table bulkhead_caught_mail (
  id bigint generated always as identity primary key,
  received_at timestamptz not null default now(),
  mail_from text not null,
  rcpt_to text[] not null,
  subject text not null,
  body text not null,
  -- The sender's Message-ID: one per outbox row, so a row sent again is caught once.
  message_id text unique,
  -- From the X-Bulkhead-Approval and X-Bulkhead-Outbox headers; not foreign keys: they are what the
  -- message said, and a message may name an approval this database does not have.
  approval_id text,
  outbox_id bigint
);
create index bulkhead_caught_mail_received on bulkhead_caught_mail (received_at desc, id desc);
