-- Credit notes stay CN-YYYY-NNNN, but numbering goes on past 9999 (CN-2026-10000) instead of failing.
alter table credit_notes drop constraint credit_notes_number_check;
alter table credit_notes add constraint credit_notes_number_check check (number ~ '^CN-\d{4}-\d{4,}$');
