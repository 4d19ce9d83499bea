-- People from the company's identity provider (issue 46, items 1 and 2): console sign-in by OpenID
-- Connect, rights from the IdP's groups.
--
-- A person is the IdP's `iss` + `sub` (bulkhead_persons), shown by name and e-mail, both updated at each
-- sign-in; the same person across renames and e-mail changes. In the console a person acts through one
-- approver row of bulkhead_tokens that names them (`person_id`): their *console identity*. Its secret is
-- random and known to nobody (it never opens the console as a pasted token: the proof refuses it), so a
-- person's authority exists only as a console session that `bulkhead_console_oidc_sign_in` opened. Sessions,
-- proofs, decisions and their audit events keep naming a token id, as they did for approver tokens, and
-- revoking that row (or, later, a SCIM deactivation) ends every session of the person.
--
-- A person's rights are never stored on that row: they are re-read from bulkhead_groups at every use, for
-- the groups the IdP named at the person's last sign-in. An approver token issued by hand keeps the rights
-- its scopes give (it approves every server, as before).
--
-- What the database verifies, and what stays the console's claim. The console's login cannot open a
-- session for a person without a sign-in the database started (state and nonce, single use, ten minutes,
-- bound to the browser's cookie); the ID token must carry that nonce, the issuer and client the sign-in
-- was started for, and be unexpired by the database's clock; its claims (sub, name, e-mail, groups) are
-- read by the database from the ID token itself, never passed beside it. What the database cannot check
-- is the ID token's signature (it holds no JWKS and no crypto for JWS): the console verifies it
-- (openid-client, against the IdP's JWKS), and the database keeps the ID token with the session and its
-- hash in the sign-in's audit event, so that anyone may verify afterwards that each person's session
-- rests on a token the IdP signed. A compromised console login could therefore forge an unsigned ID
-- token for any `sub` of the issuer it starts a sign-in for, and would leave that forgery on record.

create table bulkhead_persons (
  id text primary key check (id ~ '^pe_[a-z2-9]{12}$'),
  issuer text not null check (length(issuer) between 1 and 500),
  subject text not null check (length(subject) between 1 and 255),
  name text check (length(name) <= 200),
  email text check (length(email) <= 320),
  -- The IdP's groups as of the last sign-in (SCIM, later, keeps them current between sign-ins).
  groups text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  signed_in_at timestamptz,
  -- A person deactivated (SCIM) signs in no more and acts no more.
  deactivated_at timestamptz,
  unique (issuer, subject)
);

-- Rights by IdP group, managed as data (`bulkhead groups`, the console's operator pages), every change
-- audited. `approve`: MCP servers whose requests members decide; `operate`: the operator's pages;
-- `tokens`: servers (`customer`) or server scopes (`customer:account:read`) members may hold tokens for.
create table bulkhead_groups (
  idp_group text primary key check (length(idp_group) between 1 and 256),
  approve text[] not null default '{}',
  operate boolean not null default false,
  tokens text[] not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  updated_by text not null,
  check (cardinality(approve) > 0 or operate or cardinality(tokens) > 0)
);

alter table bulkhead_tokens add column person_id text references bulkhead_persons (id);
create unique index bulkhead_tokens_console_identity on bulkhead_tokens (person_id)
  where person_id is not null and kind = 'approver' and server = 'console' and revoked_at is null;

-- The ID token a person's session was opened with (compact JWS), to be verified afterwards against the
-- IdP's keys; null for a session opened with an approver token.
alter table bulkhead_console_sessions add column id_token text;

-- OpenID Connect sign-ins in flight. Started by the console (`bulkhead_oidc_begin`) with random state,
-- nonce and PKCE verifier, bound to a random value in the browser's cookie (hashes only of state and
-- binding); resumed once at the callback (`bulkhead_oidc_resume`: hands back nonce, verifier and where to
-- go), completed once (`bulkhead_console_oidc_sign_in`). A state presented again is refused.
create table bulkhead_oidc_sign_ins (
  state_hash bytea primary key,
  binding_hash bytea not null,
  issuer text not null,
  client_id text not null,
  nonce text not null,
  verifier text not null,
  next text,
  source text not null,
  expires_at timestamptz not null,
  resumed_at timestamptz,
  completed_at timestamptz
);
create index bulkhead_oidc_sign_ins_expires on bulkhead_oidc_sign_ins (expires_at);

create function bulkhead_oidc_begin(p_state text, p_binding text, p_issuer text, p_client_id text, p_nonce text,
  p_verifier text, p_next text, p_source text) returns void
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  if length(p_state) < 32 or length(p_binding) < 32 or length(p_nonce) < 32 or length(p_verifier) < 43 then
    raise exception 'state, binding, nonce and verifier are random values of at least 32 characters'
      using errcode = 'check_violation';
  end if;
  delete from public.bulkhead_oidc_sign_ins where expires_at < now() - interval '1 day';
  if (select count(*) from public.bulkhead_oidc_sign_ins where source = p_source and expires_at > now()) >= 50 then
    raise exception 'too many sign-ins in flight from %', p_source using errcode = 'program_limit_exceeded';
  end if;
  insert into public.bulkhead_oidc_sign_ins (state_hash, binding_hash, issuer, client_id, nonce, verifier, next, source,
    expires_at)
  values (sha256(convert_to(p_state, 'UTF8')), sha256(convert_to(p_binding, 'UTF8')), p_issuer, p_client_id, p_nonce,
    p_verifier, p_next, left(p_source, 100), now() + interval '10 minutes');
end $$;
revoke all on function bulkhead_oidc_begin(text, text, text, text, text, text, text, text) from public;

-- The callback's first step: the sign-in `p_state` names, for the browser that holds its binding, once.
create function bulkhead_oidc_resume(p_state text, p_bindings text[])
returns table (issuer text, client_id text, nonce text, verifier text, next text)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
#variable_conflict use_column
begin
  return query update public.bulkhead_oidc_sign_ins s set resumed_at = now()
    where s.state_hash = sha256(convert_to(coalesce(p_state, ''), 'UTF8'))
      and s.binding_hash = any (select sha256(convert_to(b, 'UTF8')) from unnest(p_bindings) b)
      and s.resumed_at is null and s.expires_at > now()
    returning s.issuer, s.client_id, s.nonce, s.verifier, s.next;
end $$;
revoke all on function bulkhead_oidc_resume(text, text[]) from public;

-- The claims of a compact JWS, decoded (not verified: see the top of this file); null when malformed.
create function bulkhead_jwt_claims(p_jwt text) returns jsonb
language plpgsql immutable set search_path = pg_catalog, public, pg_temp as $$
declare
  part text := split_part(coalesce(p_jwt, ''), '.', 2);
  claims jsonb;
begin
  if p_jwt is null or length(p_jwt) > 32768 or p_jwt !~ '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' then
    return null;
  end if;
  part := translate(part, '-_', '+/');
  part := rpad(part, ((length(part) + 3) / 4) * 4, '=');
  claims := convert_from(decode(part, 'base64'), 'UTF8')::jsonb;
  return case when jsonb_typeof(claims) = 'object' then claims end;
exception when others then
  return null;
end $$;

-- The rights a person has now, from their groups: scopes as an approver token would carry them.
create function bulkhead_person_scopes(p_person text) returns text[]
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select array_remove(array[
      case when bool_or(cardinality(g.approve) > 0) then 'approvals:decide' end,
      case when bool_or(cardinality(g.tokens) > 0) then 'grants:issue' end,
      case when bool_or(g.operate) then 'tokens:manage' end], null)
  from public.bulkhead_persons p join public.bulkhead_groups g on g.idp_group = any (p.groups)
  where p.id = p_person and p.deactivated_at is null
$$;
revoke all on function bulkhead_person_scopes(text) from public;

-- Whether a person may decide `p_server`'s requests now: one of their groups is mapped to approve it.
create function bulkhead_person_may_approve(p_person text, p_server text) returns boolean
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select exists (select 1 from public.bulkhead_persons p join public.bulkhead_groups g on g.idp_group = any (p.groups)
    where p.id = p_person and p.deactivated_at is null and p_server = any (g.approve))
$$;
revoke all on function bulkhead_person_may_approve(text, text) from public;

-- Whether a person may hold a token for `p_server` with `p_scopes` now: a group grants the whole server,
-- or each scope (`server:scope`).
create function bulkhead_person_may_hold(p_person text, p_server text, p_scopes text[]) returns boolean
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  with mine as (select g.tokens from public.bulkhead_persons p join public.bulkhead_groups g on g.idp_group = any (p.groups)
    where p.id = p_person and p.deactivated_at is null)
  select exists (select 1 from mine where p_server = any (mine.tokens))
    or (cardinality(p_scopes) > 0 and not exists (select 1 from unnest(p_scopes) s
      where not exists (select 1 from mine where (p_server || ':' || s) = any (mine.tokens))))
$$;
revoke all on function bulkhead_person_may_hold(text, text, text[]) from public;

-- The approver a secret proves (0045), now also a person's session: its scopes are the person's rights
-- as their groups give them at this moment. A person's console identity never opens as a pasted token.
create or replace function bulkhead_console_proof(p_proof text)
returns table (token_id text, label text, owner text, scopes text[])
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  m text[];
begin
  if p_proof is null or length(p_proof) > 200 then return; end if;
  m := regexp_match(p_proof, '^bh_console_([a-z2-9]{12})_([A-Za-z0-9_-]{43})$');
  if m is not null then
    return query select t.id, t.label, t.owner, t.scopes from public.bulkhead_tokens t
      where t.id = m[1] and t.secret_hash = sha256(convert_to(m[2], 'UTF8')) and t.person_id is null
        and t.kind = 'approver' and t.server = 'console' and t.revoked_at is null
        and (t.expires_at is null or t.expires_at > now());
    return;
  end if;
  return query select t.id, t.label, t.owner,
      case when t.person_id is null then t.scopes else public.bulkhead_person_scopes(t.person_id) end
    from public.bulkhead_console_sessions s join public.bulkhead_tokens t on t.id = s.token_id
    where s.id_hash = sha256(convert_to(p_proof, 'UTF8')) and s.expires_at > now()
      and t.kind = 'approver' and t.server = 'console' and t.revoked_at is null
      and (t.expires_at is null or t.expires_at > now())
      and (t.person_id is null or exists (select 1 from public.bulkhead_persons p
        where p.id = t.person_id and p.deactivated_at is null));
end $$;

-- The operator check of the audit log's row policy (0044), for a person by their groups now.
create or replace function bulkhead_operator(p_id text) returns boolean
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select coalesce((select case when t.person_id is null then 'tokens:manage' = any (t.scopes)
      else 'tokens:manage' = any (public.bulkhead_person_scopes(t.person_id)) end
    from public.bulkhead_tokens t
    where t.id = p_id and t.kind = 'approver' and t.server = 'console' and t.revoked_at is null
      and (t.expires_at is null or t.expires_at > now())), false)
$$;

-- Whether a token may grant OAuth access (0038), for a person by their groups now.
create or replace function bulkhead_approver_can_grant(p_id text) returns boolean
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select coalesce((select case when t.person_id is null then 'grants:issue' = any (t.scopes)
      else 'grants:issue' = any (public.bulkhead_person_scopes(t.person_id)) end
    from public.bulkhead_tokens t
    where t.id = p_id and t.kind = 'approver' and t.server = 'console' and t.revoked_at is null
      and (t.expires_at is null or t.expires_at > now())), false)
$$;

-- Whether the approver proven in this transaction may decide `p_server`'s requests: an approver token
-- issued by hand decides every server; a person, only a server one of their groups approves now.
create function bulkhead_console_may_decide(p_server text) returns boolean
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select coalesce((select t.person_id is null or public.bulkhead_person_may_approve(t.person_id, p_server)
    from public.bulkhead_console_proven() f join public.bulkhead_tokens t on t.id = f.token_id limit 1), false)
$$;
revoke all on function bulkhead_console_may_decide(text) from public;

-- The person behind the approver proven in this transaction, if it is a person.
create function bulkhead_console_proven_person()
returns table (person_id text, name text, email text, groups text[])
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select p.id, p.name, p.email, p.groups
  from public.bulkhead_console_proven() f join public.bulkhead_tokens t on t.id = f.token_id
    join public.bulkhead_persons p on p.id = t.person_id
  limit 1
$$;
revoke all on function bulkhead_console_proven_person() from public;

-- A random identifier from the database's own randomness: a prefix and 12 of [a-z2-7].
create function bulkhead_random_id(p_prefix text) returns text
language sql volatile set search_path = pg_catalog, public, pg_temp as $$
  select p_prefix || string_agg(substr('abcdefghijklmnopqrstuvwxyz234567', get_byte(b, i) % 32 + 1, 1), '' order by i)
  from (select uuid_send(gen_random_uuid()) as b) r, generate_series(0, 11) i
$$;

-- Sign-in by OpenID Connect: completes the sign-in `p_state` names (resumed once, not completed, in time)
-- with the ID token the console received for it. The database reads the claims from the ID token itself
-- and requires its nonce, its issuer and audience (those the sign-in was started for) and its expiry; the
-- person (`iss` + `sub`) is created or updated with the name, e-mail and groups it carries. A person whose
-- groups map to no right is recorded but gets no session (outcome `no_rights`); a deactivated person is
-- refused (`deactivated`). Otherwise the person's console identity is found or made, and a session opened.
create function bulkhead_console_oidc_sign_in(p_state text, p_id_token text, p_groups_claim text, p_session text,
  p_csrf text, p_hours double precision)
returns table (outcome text, person_id text, token_id text, label text, issuer text, subject text, name text,
  email text, groups text[], scopes text[])
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
#variable_conflict use_column
declare
  f public.bulkhead_oidc_sign_ins;
  c jsonb := public.bulkhead_jwt_claims(p_id_token);
  claim_groups jsonb;
  g text[] := '{}';
  p public.bulkhead_persons;
  t public.bulkhead_tokens;
  rights text[];
  shown text;
begin
  update public.bulkhead_oidc_sign_ins s set completed_at = now()
    where s.state_hash = sha256(convert_to(coalesce(p_state, ''), 'UTF8')) and s.resumed_at is not null
      and s.completed_at is null and s.expires_at > now()
    returning * into f;
  if not found then
    raise exception 'no OpenID Connect sign-in in flight for this state: unknown, expired or already used'
      using errcode = 'insufficient_privilege';
  end if;
  if c is null or coalesce(c->>'sub', '') = '' then
    raise exception 'the ID token is malformed or names no subject' using errcode = 'insufficient_privilege';
  end if;
  if c->>'nonce' is distinct from f.nonce then
    raise exception 'the ID token does not carry the nonce of this sign-in' using errcode = 'insufficient_privilege';
  end if;
  if c->>'iss' is distinct from f.issuer then
    raise exception 'the ID token was issued by %, not by %', c->>'iss', f.issuer using errcode = 'insufficient_privilege';
  end if;
  if not (c->'aud' = to_jsonb(f.client_id) or (jsonb_typeof(c->'aud') = 'array' and c->'aud' ? f.client_id)) then
    raise exception 'the ID token is not for client %', f.client_id using errcode = 'insufficient_privilege';
  end if;
  if jsonb_typeof(c->'exp') <> 'number' or to_timestamp((c->>'exp')::float8) <= now() - interval '1 minute' then
    raise exception 'the ID token has expired' using errcode = 'insufficient_privilege';
  end if;
  if p_session is null or length(p_session) not between 32 and 200 or p_csrf is null or length(p_csrf) < 32 then
    raise exception 'a session id and its CSRF token are random values of at least 32 characters'
      using errcode = 'check_violation';
  end if;
  if p_hours is null or p_hours <= 0 or p_hours > 168 then
    raise exception 'a console session lasts up to 168 hours' using errcode = 'check_violation';
  end if;
  claim_groups := c->coalesce(nullif(p_groups_claim, ''), 'groups');
  if jsonb_typeof(claim_groups) = 'array' then
    select coalesce(array_agg(distinct left(x, 256)) filter (where x <> ''), '{}') into g
      from jsonb_array_elements_text(claim_groups) x;
  elsif jsonb_typeof(claim_groups) = 'string' then
    g := array[left(claim_groups #>> '{}', 256)];
  end if;
  insert into public.bulkhead_persons as x (id, issuer, subject, name, email, groups, signed_in_at)
    values (public.bulkhead_random_id('pe_'), f.issuer, left(c->>'sub', 255),
      left(coalesce(c->>'name', c->>'preferred_username'), 200), left(c->>'email', 320), g, now())
    on conflict (issuer, subject) do update set name = excluded.name, email = excluded.email, groups = excluded.groups,
      signed_in_at = now(), updated_at = now()
    returning * into p;
  shown := coalesce(p.name, p.email, p.subject);
  if p.deactivated_at is not null then
    return query select 'deactivated'::text, p.id, null::text, shown, p.issuer, p.subject, p.name, p.email, p.groups,
      '{}'::text[];
    return;
  end if;
  rights := public.bulkhead_person_scopes(p.id);
  if cardinality(rights) = 0 then
    return query select 'no_rights'::text, p.id, null::text, shown, p.issuer, p.subject, p.name, p.email, p.groups,
      rights;
    return;
  end if;
  select * into t from public.bulkhead_tokens k
    where k.person_id = p.id and k.kind = 'approver' and k.server = 'console' and k.revoked_at is null for update;
  if not found then
    insert into public.bulkhead_tokens (id, kind, server, label, scopes, secret_hash, created_by, owner, person_id)
      values (public.bulkhead_random_id(''), 'approver', 'console', left(shown, 200), '{}',
        sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())), 'oidc', coalesce(p.email, shown), p.id)
      returning * into t;
  else
    update public.bulkhead_tokens k set label = left(shown, 200), owner = coalesce(p.email, shown) where k.id = t.id
      returning * into t;
  end if;
  insert into public.bulkhead_console_sessions (id_hash, token_id, csrf, expires_at, id_token)
    values (sha256(convert_to(p_session, 'UTF8')), t.id, p_csrf, now() + p_hours * interval '1 hour', p_id_token);
  return query select 'ok'::text, p.id, t.id, t.label, p.issuer, p.subject, p.name, p.email, p.groups, rights;
end $$;
revoke all on function bulkhead_console_oidc_sign_in(text, text, text, text, text, double precision) from public;

-- The approver behind a session cookie (0045), with the person behind it, if any.
drop function bulkhead_console_session(text);
create function bulkhead_console_session(p_session text)
returns table (token_id text, label text, owner text, scopes text[], csrf text, person_id text, email text)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  p record;
  h bytea := sha256(convert_to(coalesce(p_session, ''), 'UTF8'));
begin
  if p_session is null or p_session ~ '^bh_' then return; end if;
  select * into p from public.bulkhead_console_proof(p_session) limit 1;
  if not found then return; end if;
  return query update public.bulkhead_console_sessions s set last_seen_at = now() where s.id_hash = h
    returning p.token_id, p.label, p.owner, p.scopes, s.csrf,
      (select t.person_id from public.bulkhead_tokens t where t.id = p.token_id),
      (select x.email from public.bulkhead_tokens t join public.bulkhead_persons x on x.id = t.person_id
        where t.id = p.token_id);
end $$;
revoke all on function bulkhead_console_session(text) from public;
