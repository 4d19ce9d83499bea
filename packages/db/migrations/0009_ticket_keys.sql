-- Ticket keys stay T-NNNN, but numbering goes on past T-9999: ticket_key_seq starts at 5001,
-- and under the old check (exactly four digits) the 5,000th new ticket failed its insert.
-- T-10000 is as good a key as T-1001; every server's ticket-key argument accepts four digits or more.
alter table tickets drop constraint tickets_key_check;
alter table tickets add constraint tickets_key_check check (key ~ '^T-\d{4,}$');
