-- Console sign-in (issue 10, point 7).

-- Each sign-in form carries a single-use nonce that the console minted. Only hashes are stored: of the
-- nonce, and of the random value the console put in the browser's sign-in cookie with it. A form token
-- planted from another site on the same host (cookies ignore ports) was never minted, so it is refused;
-- a minted one works once, within its hour. `source` caps how many open forms one address can hold.
create table bulkhead_console_sign_in_forms (
  nonce_hash bytea primary key,
  binding_hash bytea not null,
  source text not null,
  expires_at timestamptz not null
);

create index bulkhead_console_sign_in_forms_source on bulkhead_console_sign_in_forms (source, expires_at);
create index bulkhead_console_sign_in_forms_expires on bulkhead_console_sign_in_forms (expires_at);

-- Refused sign-ins per source address, by the database's clock, so the limit holds across every
-- console replica. `failures` keeps the times of the refusals still inside the window (at most the
-- limit: past it, attempts are turned away before they are counted); `reported_at` is when the last
-- audit event about this source being throttled was written (one per window, not one per attempt).
create table bulkhead_console_sign_in_failures (
  source text primary key,
  failures timestamptz[] not null default '{}',
  reported_at timestamptz,
  updated_at timestamptz not null default now()
);

create index bulkhead_console_sign_in_failures_updated on bulkhead_console_sign_in_failures (updated_at);
