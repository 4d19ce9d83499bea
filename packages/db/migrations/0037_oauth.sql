-- OAuth 2.1 (issue 15): a person grants an MCP client access in the console, and the client gets a
-- per-access token for one server. The console is the authorization server. Clients, codes, grants and
-- refresh tokens live here; the access tokens a grant yields are rows of bulkhead_tokens like any
-- other (same audience binding, scopes, expiry, owner, revocation, verification), marked by grant_id.
-- The console's role writes these tables but never the token table: tokens are issued and revoked
-- through the SECURITY DEFINER functions below, which check what they are asked.

-- A client: registered dynamically (RFC 7591, client_id minted here) or known by its Client ID
-- Metadata Document (client_id is the https URL of the document, fetched and checked at each
-- authorization). Public clients only: PKCE stands in for a client secret.
create table bulkhead_oauth_clients (
  client_id text primary key,
  source text not null check (source in ('registered', 'metadata_document')),
  client_name text,
  client_uri text,
  redirect_uris text[] not null check (cardinality(redirect_uris) between 1 and 20),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- A grant: one person's consent for one client to reach one server with some scopes (and, for a
-- customer-bound server, one customer). Refresh tokens and access tokens hang off it; revoking it
-- revokes them all.
create table bulkhead_oauth_grants (
  id text primary key,
  client_id text not null references bulkhead_oauth_clients (client_id),
  server text not null,
  scopes text[] not null,
  customer_id text,
  granted_by_token_id text not null,
  granted_by text not null,
  owner text,
  created_at timestamptz not null default now(),
  revoked_at timestamptz,
  revoked_reason text
);

-- Authorization codes: single use, short-lived, bound to the client, the redirect URI, the PKCE
-- challenge (S256) and the grant they open. Only a hash of the code is kept.
create table bulkhead_oauth_codes (
  code_hash bytea primary key,
  grant_id text not null references bulkhead_oauth_grants (id),
  client_id text not null,
  redirect_uri text not null,
  code_challenge text not null check (code_challenge ~ '^[A-Za-z0-9_-]{43}$'),
  resource text not null,
  expires_at timestamptz not null,
  used_at timestamptz
);
create index bulkhead_oauth_codes_expires on bulkhead_oauth_codes (expires_at);

-- Refresh tokens, rotated at each use: a used one presented again means it leaked, and the whole
-- grant is revoked (reuse detection). Only a hash of the secret is kept.
create table bulkhead_oauth_refresh_tokens (
  id text primary key,
  grant_id text not null references bulkhead_oauth_grants (id),
  secret_hash bytea not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz
);
create index bulkhead_oauth_refresh_tokens_grant on bulkhead_oauth_refresh_tokens (grant_id);

alter table bulkhead_tokens add column grant_id text references bulkhead_oauth_grants (id);
create index bulkhead_tokens_grant on bulkhead_tokens (grant_id) where grant_id is not null;

-- Revoking a grant's access token (`tokens revoke`) revokes the grant: its refresh tokens stop working
-- too, so the client cannot mint itself a new one. Revoking the grant revokes its access tokens.
create function bulkhead_oauth_token_revoked() returns trigger language plpgsql
security definer set search_path = public, pg_catalog as $$
begin
  update bulkhead_oauth_grants set revoked_at = now(), revoked_reason = coalesce(revoked_reason, 'token_revoked')
    where id = new.grant_id and revoked_at is null;
  return null;
end $$;
create trigger bulkhead_oauth_token_revoked
  after update of revoked_at on bulkhead_tokens
  for each row when (new.grant_id is not null and old.revoked_at is null and new.revoked_at is not null)
  execute function bulkhead_oauth_token_revoked();

create function bulkhead_oauth_grant_revoked() returns trigger language plpgsql
security definer set search_path = public, pg_catalog as $$
begin
  update bulkhead_tokens set revoked_at = now() where grant_id = new.id and revoked_at is null;
  return null;
end $$;
create trigger bulkhead_oauth_grant_revoked
  after update of revoked_at on bulkhead_oauth_grants
  for each row when (old.revoked_at is null and new.revoked_at is not null)
  execute function bulkhead_oauth_grant_revoked();

-- Whether an approver token may grant OAuth access (`approvers add --can-grant`: scope grants:issue).
create function bulkhead_approver_can_grant(p_id text) returns boolean
language sql stable security definer set search_path = public, pg_catalog as $$
  select coalesce((select 'grants:issue' = any (scopes) from bulkhead_tokens
    where id = p_id and kind = 'approver' and server = 'console' and revoked_at is null
      and (expires_at is null or expires_at > now())), false)
$$;
revoke all on function bulkhead_approver_can_grant(text) from public;

-- Issues the access token of a live grant: the token carries the grant's server, scopes, customer and
-- owner, nothing the caller chooses but its id, secret hash, label and lifetime (at most a day). The
-- grant must have been given by an approver token that may still grant, for an MCP server.
create function bulkhead_oauth_issue_token(p_grant_id text, p_id text, p_secret_hash bytea, p_label text,
  p_expires_at timestamptz)
returns table (token_id text, server text, scopes text[], customer_id text, expires_at timestamptz)
language plpgsql security definer set search_path = public, pg_catalog as $$
declare
  g bulkhead_oauth_grants;
begin
  select * into g from bulkhead_oauth_grants where id = p_grant_id for update;
  if not found or g.revoked_at is not null then
    raise exception 'grant % is unknown or revoked', p_grant_id using errcode = 'check_violation';
  end if;
  if not bulkhead_approver_can_grant(g.granted_by_token_id) then
    raise exception 'grant % was given by a token that may not grant', p_grant_id using errcode = 'check_violation';
  end if;
  if not exists (select 1 from bulkhead_deployables d where d.name = g.server and d.kind = 'mcp') then
    raise exception 'grant % is for %, not an MCP server', p_grant_id, g.server using errcode = 'check_violation';
  end if;
  if p_expires_at <= now() or p_expires_at > now() + interval '1 day' then
    raise exception 'an OAuth access token lives for up to a day' using errcode = 'check_violation';
  end if;
  insert into bulkhead_tokens (id, kind, server, label, scopes, customer_id, secret_hash, created_by, expires_at,
    owner, grant_id)
  values (p_id, 'mcp', g.server, left(p_label, 200), g.scopes, g.customer_id, p_secret_hash,
    'oauth:' || g.granted_by, p_expires_at, g.owner, g.id);
  return query select p_id, g.server, g.scopes, g.customer_id, p_expires_at;
end $$;
revoke all on function bulkhead_oauth_issue_token(text, text, bytea, text, timestamptz) from public;

-- Revokes a grant and, through the trigger above, every access token it yielded.
create function bulkhead_oauth_revoke_grant(p_grant_id text, p_reason text) returns boolean
language plpgsql security definer set search_path = public, pg_catalog as $$
begin
  update bulkhead_oauth_grants set revoked_at = now(), revoked_reason = left(p_reason, 100)
    where id = p_grant_id and revoked_at is null;
  return found;
end $$;
revoke all on function bulkhead_oauth_revoke_grant(text, text) from public;

-- The grant an access token belongs to, for the revocation endpoint (RFC 7009), which is handed a token
-- and must revoke what it belongs to. Answers only when the secret matches.
create function bulkhead_oauth_token_grant(p_id text, p_secret_hash bytea) returns text
language sql stable security definer set search_path = public, pg_catalog as $$
  select grant_id from bulkhead_tokens where id = p_id and secret_hash = p_secret_hash and grant_id is not null
$$;
revoke all on function bulkhead_oauth_token_grant(text, bytea) from public;
