-- The last two definer functions the console's login could call with an id alone (issue 42; found by the
-- catalog test in test/claims.test.ts, which keeps it so for every function added later).

-- Revoking an OAuth grant took its id: the console's login could revoke any grant it read. The token
-- endpoint and the revocation endpoint (RFC 7009) always hold one of the grant's own secrets when they
-- revoke — the code presented twice, the refresh token used twice, the token handed in for revocation —
-- so the database now takes that secret and finds the grant by its hash. (Operators revoke through
-- bulkhead_operator_revoke_grant, with their own proof.)
drop function bulkhead_oauth_revoke_grant(text, text);
create function bulkhead_oauth_revoke_grant(p_secret text, p_reason text)
returns table (grant_id text, revoked boolean)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  g text;
  m text[];
begin
  if p_secret is null or length(p_secret) > 200 then return; end if;
  m := regexp_match(p_secret, '^bhr_([A-Za-z0-9_-]{16})_([A-Za-z0-9_-]{43})$');
  if m is not null then
    select r.grant_id into g from public.bulkhead_oauth_refresh_tokens r
      where r.id = m[1] and r.secret_hash = sha256(convert_to(m[2], 'UTF8'));
  end if;
  if g is null then
    m := regexp_match(p_secret, '^bho?_[a-z][a-z0-9-]{0,39}_([a-z2-9]{12})_([A-Za-z0-9_-]{43})$');
    if m is not null then
      select t.grant_id into g from public.bulkhead_tokens t
        where t.id = m[1] and t.secret_hash = sha256(convert_to(m[2], 'UTF8')) and t.grant_id is not null;
    end if;
  end if;
  if g is null then
    select c.grant_id into g from public.bulkhead_oauth_codes c where c.code_hash = sha256(convert_to(p_secret, 'UTF8'));
  end if;
  if g is null then return; end if;
  update public.bulkhead_oauth_grants set revoked_at = now(), revoked_reason = left(p_reason, 100)
    where id = g and revoked_at is null;
  return query select g, found;
end $$;
revoke all on function bulkhead_oauth_revoke_grant(text, text) from public;

-- Whose a token is (separation of duties). The approvals guard runs as the console's login and needs the
-- owner of the token that requested the approval being decided; any other answer told the login who
-- holds which token. It answers now only for a token that requested an approval still pending.
create or replace function bulkhead_token_owner(p_id text) returns text language sql stable security definer
set search_path = pg_catalog, public, pg_temp as $$
  select t.owner from public.bulkhead_tokens t
  where t.id = p_id and exists (select 1 from public.bulkhead_approvals a
    where a.requested_by_token_id = t.id and a.status = 'pending')
$$;
revoke all on function bulkhead_token_owner(text) from public;

-- The grant of an access token, looked up for revocation: the function above does it now.
drop function bulkhead_oauth_token_grant(text, bytea);

-- The live approver behind a token id (0038): nothing calls it since decisions name their approver by
-- proof (0045), and a function that answers for an id alone is one to keep out of reach.
drop function bulkhead_approver(text);
