-- Production runs each server under its own Postgres role. This function gives such a
-- role what a server needs and nothing more: the audit log may be appended to and read,
-- never changed or emptied; tokens may be read and their last use noted, not issued.
-- Usage (as the schema owner): create role bulkhead_admin login password '…';
--                              select bulkhead_grant_server_role('bulkhead_admin');
create function bulkhead_grant_server_role(role_name text) returns void language plpgsql as $$
begin
  execute format('grant usage on schema public to %I', role_name);
  execute format('grant select, insert, update, delete on all tables in schema public to %I', role_name);
  execute format('grant usage, select on all sequences in schema public to %I', role_name);
  execute format('revoke insert, update, delete, truncate on audit_events, audit_checkpoints from %I', role_name);
  execute format('grant select, insert on audit_events to %I', role_name);
  execute format('revoke insert, update, delete, truncate on bulkhead_migrations from %I', role_name);
  execute format('revoke insert, update, delete, truncate on bulkhead_tokens from %I', role_name);
  execute format('grant update (last_used_at) on bulkhead_tokens to %I', role_name);
end $$;
