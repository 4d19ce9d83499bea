-- Traces an operator can follow (issue 32). An audit event records the W3C trace id of the request
-- that wrote it, so that an operator can go from an event to its trace and back. Null when the
-- request was not traced (no exporter configured): such an event is sealed exactly as every event
-- before this column was (the seal leaves a null `trace_id` out of the sealed body).
alter table audit_events
  add column trace_id text check (trace_id ~ '^[0-9a-f]{32}$');
create index audit_events_trace on audit_events (trace_id) where trace_id is not null;

-- The call that filed an approval, as a W3C `traceparent` (its server span): the approved action's
-- execution, later and in another trace, links to it.
alter table bulkhead_approvals
  add column filed_in_trace text check (filed_in_trace ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$');
