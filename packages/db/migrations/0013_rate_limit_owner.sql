-- Rate-limit counts belong to the server that counted them: a server role sees and changes only its
-- own tokens' counts (row-level security), so a compromised server cannot reset or inflate another's.
alter table bulkhead_rate_limits add column server text not null default coalesce(bulkhead_current_deployable(), '');
alter table bulkhead_rate_limits drop constraint bulkhead_rate_limits_pkey;
alter table bulkhead_rate_limits add primary key (server, token_id, window_start);
alter table bulkhead_rate_limits enable row level security;
