-- Approved means exactly what the person saw (issue 43). A gated tool's effect uses values its
-- arguments do not fix (the address on file, the amount due, what a silence matches); they are read
-- when the request is filed, shown to the approver and stored here, and the approved action runs only
-- if they still hold, building its effect from them. Null for a tool without such values.
--
-- Deployable roles insert approvals but update only the columns granted in roles.ts (outcome columns
-- for the servers, decision columns for the console): no deployable can change these after filing.
alter table public.bulkhead_approvals
  add column approved_values jsonb check (approved_values is null or jsonb_typeof(approved_values) = 'object');
