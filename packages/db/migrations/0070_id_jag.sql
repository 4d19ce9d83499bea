-- MCP clients by enterprise-managed authorization (issue 46, item 5; the MCP extension
-- io.modelcontextprotocol/enterprise-managed-authorization): a client presents at the console's token
-- endpoint an Identity Assertion JWT Authorization Grant (ID-JAG, draft-ietf-oauth-identity-assertion-
-- authz-grant) that the company's IdP issued to it for one person and one Bulkhead MCP server (RFC 8693
-- token exchange at the IdP), as an RFC 7523 JWT bearer grant; it gets a short-lived access token for
-- that server, to that person, within the rights their groups give them now.
--
-- What the database verifies, and what stays the console's claim. `bulkhead_oauth_idjag_token` reads the
-- claims from the assertion itself (never beside it): `iss` must be the issuer the console names, `aud`
-- the console's own issuer URL, `client_id` the client that authenticated, `exp` in the future and `iat`
-- not in it by the database's clock (30 s of skew), and its `jti` must never have been redeemed
-- (bulkhead_idjag_uses, kept until the assertion expires). The person is `iss` + `sub` of
-- bulkhead_persons, active, and a group of theirs maps them to hold tokens for the server with the
-- scopes asked. What the database cannot check is the JWS signature (it holds no JWKS and no crypto for
-- JWS): the console verifies it against the JWKS of BULKHEAD_OIDC_ISSUER's discovery document, and the
-- SHA-256 of the assertion is kept here and in the exchange's audit event, so that anyone may verify
-- afterwards that each such token rests on an assertion the IdP signed. A compromised console login
-- could therefore forge an unsigned assertion for a person of the configured issuer, and would leave
-- that forgery's hash on record; it could not go beyond that person's groups' rights.

create table bulkhead_idjag_uses (
  issuer text not null,
  jti text not null check (length(jti) between 1 and 255),
  person_id text not null references bulkhead_persons (id),
  client_id text not null,
  server text not null,
  assertion_hash bytea not null,
  token_id text not null,
  expires_at timestamptz not null,
  used_at timestamptz not null default now(),
  primary key (issuer, jti)
);

-- Exchanges an ID-JAG for an access token (token id and hash of a fresh secret chosen by the caller).
-- Returns one row: the person the assertion names (null when unknown) and, when refused, why
-- (`refused`, a reason word; nothing is written); otherwise the token's server, scopes and expiry.
create function bulkhead_oauth_idjag_token(p_assertion text, p_issuer text, p_audience text, p_client_id text,
  p_server text, p_scopes text[], p_id text, p_secret_hash bytea, p_label text, p_expires_at timestamptz)
returns table (refused text, person_id text, person_name text, token_id text, scopes text[], expires_at timestamptz)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  c jsonb := public.bulkhead_jwt_claims(p_assertion);
  person public.bulkhead_persons;
  exp timestamptz;
  granted text[] := coalesce(p_scopes, '{}');
  skew constant interval := interval '30 seconds';
begin
  if c is null or jsonb_typeof(c -> 'sub') <> 'string' or jsonb_typeof(c -> 'jti') <> 'string'
    or jsonb_typeof(c -> 'exp') <> 'number' or jsonb_typeof(c -> 'iat') <> 'number' then
    return query select 'claims_missing', null::text, null::text, null::text, null::text[], null::timestamptz;
    return;
  end if;
  select * into person from public.bulkhead_persons p where p.issuer = c ->> 'iss' and p.subject = c ->> 'sub';
  if c ->> 'iss' is distinct from p_issuer then
    return query select 'issuer_untrusted', person.id, person.name, null::text, null::text[], null::timestamptz;
    return;
  end if;
  if not (c -> 'aud' = to_jsonb(p_audience) or (jsonb_typeof(c -> 'aud') = 'array' and c -> 'aud' ? p_audience)) then
    return query select 'audience_mismatch', person.id, person.name, null::text, null::text[], null::timestamptz;
    return;
  end if;
  if c ->> 'client_id' is distinct from p_client_id then
    return query select 'client_mismatch', person.id, person.name, null::text, null::text[], null::timestamptz;
    return;
  end if;
  exp := to_timestamp((c ->> 'exp')::double precision);
  if exp <= now() - skew or to_timestamp((c ->> 'iat')::double precision) > now() + skew then
    return query select 'assertion_expired', person.id, person.name, null::text, null::text[], null::timestamptz;
    return;
  end if;
  if person.id is null then
    return query select 'person_unknown', null::text, null::text, null::text, null::text[], null::timestamptz;
    return;
  end if;
  if person.deactivated_at is not null then
    return query select 'person_deactivated', person.id, person.name, null::text, null::text[], null::timestamptz;
    return;
  end if;
  if not exists (select 1 from public.bulkhead_deployables d where d.name = p_server and d.kind = 'mcp') then
    return query select 'resource_unknown', person.id, person.name, null::text, null::text[], null::timestamptz;
    return;
  end if;
  if not public.bulkhead_person_may_hold(person.id, p_server, granted) then
    return query select 'no_rights', person.id, person.name, null::text, null::text[], null::timestamptz;
    return;
  end if;
  if p_expires_at <= now() or p_expires_at > now() + interval '1 hour' then
    raise exception 'an access token from an ID-JAG lives for up to an hour' using errcode = 'check_violation';
  end if;
  -- Expired assertions cannot be presented again, so their jti need not be remembered.
  delete from public.bulkhead_idjag_uses u where u.expires_at < now() - skew;
  insert into public.bulkhead_idjag_uses (issuer, jti, person_id, client_id, server, assertion_hash, token_id, expires_at)
    values (p_issuer, c ->> 'jti', person.id, p_client_id, p_server, sha256(convert_to(p_assertion, 'UTF8')), p_id,
      greatest(exp, now()) + skew)
    on conflict do nothing;
  if not found then
    return query select 'assertion_replayed', person.id, person.name, null::text, null::text[], null::timestamptz;
    return;
  end if;
  insert into public.bulkhead_tokens (id, kind, server, label, scopes, secret_hash, created_by, expires_at, owner,
    person_id)
  values (p_id, 'mcp', p_server, left(p_label, 200), granted, p_secret_hash, 'idjag:' || p_client_id, p_expires_at,
    coalesce(person.email, person.name, person.subject), person.id);
  return query select null::text, person.id, person.name, p_id, granted, p_expires_at;
end $$;
revoke all on function bulkhead_oauth_idjag_token(text, text, text, text, text, text[], text, bytea, text, timestamptz)
  from public;
