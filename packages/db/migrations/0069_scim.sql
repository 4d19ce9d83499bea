-- Offboarding by SCIM 2.0 (issue 46, item 4): the company's identity provider creates, replaces,
-- deactivates and deletes people and sets their groups through the console's /scim/v2 endpoints.
--
-- What the database verifies. Every SCIM function takes the bearer token the IdP presented and compares
-- its SHA-256 with the one the owner stored (`bulkhead_scim_set_token_hash`, which no deployable may
-- run: `bulkhead scim set-token`). So the console's login cannot deactivate, reactivate or regroup a
-- person, nor create one, without the SCIM token itself; it still reads persons (0063). What stays the
-- console's claim: the issuer a new person is recorded under (the console's BULKHEAD_OIDC_ISSUER), and
-- the audit event that lists the revocations (written by the console in the same transaction as the
-- function that made them, so that the two commit together or not at all).
--
-- A SCIM User is a person: `id` is the person's id, `userName` the e-mail the IdP signs them in with,
-- `externalId` the IdP's own id for them (the OpenID Connect `sub` at Okta and Keycloak). A person who
-- signed in before the IdP provisioned them is found by that subject or by e-mail. A SCIM Group is an
-- IdP group as `bulkhead_groups` maps it (its displayName), its members the persons whose `groups`
-- name it. Deactivation (active=false) and deletion revoke, in the same transaction, every token the
-- person owns (their console identity, approver tokens and MCP tokens owned by them, the access tokens
-- of their OAuth grants), those grants, their console sessions, and withdraw the pending approvals they
-- filed, with a reason.

alter table bulkhead_persons
  add column scim_user_name text check (length(scim_user_name) between 1 and 320),
  add column external_id text check (length(external_id) between 1 and 255),
  add column scim_deleted_at timestamptz;
create unique index bulkhead_persons_scim_user_name on bulkhead_persons (lower(scim_user_name))
  where scim_user_name is not null and scim_deleted_at is null;

-- Why a pending request was withdrawn, when it was not its requester's doing.
alter table bulkhead_approvals add column withdrawn_reason text check (length(withdrawn_reason) <= 500);

create table bulkhead_scim_groups (
  id text primary key check (id ~ '^gr_[a-z2-9]{12}$'),
  display_name text not null unique check (length(display_name) between 1 and 256),
  external_id text check (length(external_id) <= 255),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- The SCIM bearer's SHA-256, one row, written only by the owner.
create table bulkhead_scim_token (
  only_row boolean primary key default true check (only_row),
  token_hash bytea not null check (length(token_hash) = 32),
  set_at timestamptz not null default now()
);

create function bulkhead_scim_set_token_hash(p_hash bytea) returns void
language sql security definer set search_path = pg_catalog, public, pg_temp as $$
  insert into public.bulkhead_scim_token (token_hash) values (p_hash)
    on conflict (only_row) do update set token_hash = excluded.token_hash, set_at = now()
$$;
revoke all on function bulkhead_scim_set_token_hash(bytea) from public;

-- Refuses unless `p_token` is the SCIM bearer the owner stored.
create function bulkhead_scim_proof(p_token text) returns void
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  if p_token is null or length(p_token) > 500 or not exists (select 1 from public.bulkhead_scim_token s
      where s.token_hash = sha256(convert_to(p_token, 'UTF8'))) then
    raise exception 'the SCIM bearer token is not the one the owner set' using errcode = 'insufficient_privilege';
  end if;
end $$;
revoke all on function bulkhead_scim_proof(text) from public;

-- Whether `p_token` is the SCIM bearer (for a 401 before anything else happens).
create function bulkhead_scim_check(p_token text) returns boolean
language sql stable security definer set search_path = pg_catalog, public, pg_temp as $$
  select p_token is not null and length(p_token) <= 500 and exists (select 1 from public.bulkhead_scim_token s
    where s.token_hash = sha256(convert_to(p_token, 'UTF8')))
$$;
revoke all on function bulkhead_scim_check(text) from public;

-- A person as a SCIM User.
create function bulkhead_scim_users(p_token text, p_id text, p_user_name text)
returns table (id text, user_name text, external_id text, name text, email text, active boolean, groups text[],
  created_at timestamptz, updated_at timestamptz)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_scim_proof(p_token);
  return query select p.id, coalesce(p.scim_user_name, p.email, p.subject), p.external_id, p.name, p.email,
      p.deactivated_at is null, p.groups, p.created_at, p.updated_at
    from public.bulkhead_persons p
    where p.scim_deleted_at is null and (p_id is null or p.id = p_id)
      and (p_user_name is null or lower(coalesce(p.scim_user_name, p.email, p.subject)) = lower(p_user_name))
    order by p.created_at, p.id limit 1000;
end $$;
revoke all on function bulkhead_scim_users(text, text, text) from public;

-- Everything `p_person` holds, taken away: the revocations as a list for the audit event.
create function bulkhead_scim_offboard(p_person text, p_reason text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  p public.bulkhead_persons;
  mine text[];
  gids text[];
  grants jsonb;
  tokens jsonb;
  sessions integer;
  withdrawn jsonb;
begin
  select * into p from public.bulkhead_persons where id = p_person;
  -- Every token the person owns, revoked before or not: their requests are theirs either way.
  select coalesce(array_agg(t.id), '{}') into mine from public.bulkhead_tokens t
    where t.person_id = p.id or (t.owner is not null and (public.bulkhead_same_person(t.owner, p.email)
      or public.bulkhead_same_person(t.owner, p.scim_user_name)));
  select coalesce(array_agg(o.id), '{}') into gids from public.bulkhead_oauth_grants o
    where o.revoked_at is null and (o.granted_by_token_id = any (mine) or (o.owner is not null
      and (public.bulkhead_same_person(o.owner, p.email) or public.bulkhead_same_person(o.owner, p.scim_user_name))));
  -- Tokens first (a grant's revocation would take its access tokens silently), then the grants.
  with t as (update public.bulkhead_tokens k set revoked_at = now()
      where k.revoked_at is null and (k.id = any (mine) or k.grant_id = any (gids))
      returning k.id, k.kind, k.server, k.label)
    select coalesce(jsonb_agg(jsonb_build_object('token', t.id, 'kind', t.kind, 'server', t.server, 'label', t.label)
      order by t.id), '[]') into tokens from t;
  with g as (update public.bulkhead_oauth_grants o set revoked_at = now(), revoked_reason = 'person_offboarded'
      where o.id = any (gids) returning o.id, o.server, o.client_id)
    select coalesce(jsonb_agg(jsonb_build_object('grant', g.id, 'server', g.server, 'client_id', g.client_id)
      order by g.id), '[]') into grants from g;
  delete from public.bulkhead_console_sessions s where s.token_id = any (mine);
  get diagnostics sessions = row_count;
  with a as (update public.bulkhead_approvals x set status = 'withdrawn', withdrawn_at = now(), withdrawn_reason = p_reason
      where x.status = 'pending' and x.expires_at > now() and x.requested_by_token_id = any (mine)
      returning x.id, x.server, x.tool)
    select coalesce(jsonb_agg(jsonb_build_object('approval', a.id, 'server', a.server, 'tool', a.tool) order by a.id),
      '[]') into withdrawn from a;
  return jsonb_build_object('tokens', tokens, 'grants', grants, 'sessions', sessions, 'approvals_withdrawn', withdrawn);
end $$;
revoke all on function bulkhead_scim_offboard(text, text) from public;

-- Creates (p_id null) or replaces a SCIM User. A new one is matched to a person who already signed in
-- (the issuer's subject = externalId, or the e-mail = userName) if that person is not provisioned yet,
-- or was deleted.
-- Going inactive offboards the person (`p_reason` names the SCIM request); going active again lets them
-- sign in again (nothing revoked comes back). Returns the person's id and the revocations.
create function bulkhead_scim_put_user(p_token text, p_id text, p_issuer text, p_user_name text, p_external_id text,
  p_name text, p_email text, p_active boolean, p_reason text)
returns table (person_id text, created boolean, revoked jsonb)
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  p public.bulkhead_persons;
  made boolean := false;
  was_active boolean;
begin
  perform public.bulkhead_scim_proof(p_token);
  if p_user_name is null or btrim(p_user_name) = '' then
    raise exception 'userName is required' using errcode = 'check_violation';
  end if;
  if p_id is null then
    -- A person deleted before comes back as themselves (a rehire), with nothing they held.
    select * into p from public.bulkhead_persons x where (
        (p_external_id is not null and x.issuer = p_issuer and x.subject = p_external_id)
        or lower(x.email) = lower(p_user_name) or lower(x.scim_user_name) = lower(p_user_name))
      order by (x.scim_deleted_at is not null), (x.scim_user_name is null) limit 1 for update;
    if found and p.scim_user_name is not null and p.scim_deleted_at is null then
      raise exception 'a user with userName % exists already', p_user_name using errcode = 'unique_violation';
    end if;
    if not found then
      insert into public.bulkhead_persons (id, issuer, subject, email)
        values (public.bulkhead_random_id('pe_'), coalesce(p_issuer, 'scim'), coalesce(p_external_id, p_user_name),
          p_email)
        returning * into p;
      made := true;
    end if;
  else
    select * into p from public.bulkhead_persons x where x.id = p_id and x.scim_deleted_at is null for update;
    if not found then
      raise exception 'no user %', p_id using errcode = 'no_data_found';
    end if;
  end if;
  was_active := p.deactivated_at is null;
  update public.bulkhead_persons x set scim_user_name = btrim(p_user_name), external_id = p_external_id,
      scim_deleted_at = null,
      name = coalesce(left(p_name, 200), x.name), email = coalesce(left(p_email, 320), x.email),
      deactivated_at = case when p_active then null else coalesce(x.deactivated_at, now()) end, updated_at = now()
    where x.id = p.id returning * into p;
  return query select p.id, made, case when was_active and not p_active
    then public.bulkhead_scim_offboard(p.id, p_reason) end;
end $$;
revoke all on function bulkhead_scim_put_user(text, text, text, text, text, text, text, boolean, text) from public;

-- Deletes a SCIM User: offboarded, and no longer listed. The person's row stays: tokens, decisions and
-- audit events keep naming it.
create function bulkhead_scim_delete_user(p_token text, p_id text, p_reason text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  revoked jsonb;
begin
  perform public.bulkhead_scim_proof(p_token);
  update public.bulkhead_persons set deactivated_at = coalesce(deactivated_at, now()), scim_deleted_at = now(),
      groups = '{}', updated_at = now()
    where id = p_id and scim_deleted_at is null;
  if not found then
    raise exception 'no user %', p_id using errcode = 'no_data_found';
  end if;
  revoked := public.bulkhead_scim_offboard(p_id, p_reason);
  return revoked;
end $$;
revoke all on function bulkhead_scim_delete_user(text, text, text) from public;

-- SCIM Groups with their members (person ids).
create function bulkhead_scim_groups(p_token text, p_id text, p_display_name text)
returns table (id text, display_name text, external_id text, members text[], created_at timestamptz,
  updated_at timestamptz)
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
begin
  perform public.bulkhead_scim_proof(p_token);
  return query select g.id, g.display_name, g.external_id,
      coalesce((select array_agg(p.id order by p.id) from public.bulkhead_persons p
        where g.display_name = any (p.groups) and p.scim_deleted_at is null), '{}'),
      g.created_at, g.updated_at
    from public.bulkhead_scim_groups g
    where (p_id is null or g.id = p_id) and (p_display_name is null or g.display_name = p_display_name)
    order by g.display_name limit 1000;
end $$;
revoke all on function bulkhead_scim_groups(text, text, text) from public;

-- Creates (p_id null) or replaces a SCIM Group: its name and exactly these members. The persons who
-- joined or left are returned, for the audit event; their rights change at their next use.
create function bulkhead_scim_put_group(p_token text, p_id text, p_display_name text, p_external_id text,
  p_members text[])
returns table (group_id text, created boolean, joined text[], left_ text[])
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  g public.bulkhead_scim_groups;
  old_name text;
  j text[];
  l text[];
  unknown text;
begin
  perform public.bulkhead_scim_proof(p_token);
  select m into unknown from unnest(p_members) m where not exists (select 1 from public.bulkhead_persons p
    where p.id = m and p.scim_deleted_at is null) limit 1;
  if unknown is not null then
    raise exception 'no user %', unknown using errcode = 'no_data_found';
  end if;
  if p_id is null then
    insert into public.bulkhead_scim_groups (id, display_name, external_id)
      values (public.bulkhead_random_id('gr_'), btrim(p_display_name), p_external_id) returning * into g;
    old_name := g.display_name;
  else
    select * into g from public.bulkhead_scim_groups x where x.id = p_id for update;
    if not found then
      raise exception 'no group %', p_id using errcode = 'no_data_found';
    end if;
    old_name := g.display_name;
    update public.bulkhead_scim_groups x set display_name = btrim(p_display_name), external_id = p_external_id,
        updated_at = now() where x.id = g.id returning * into g;
  end if;
  select coalesce(array_agg(p.id order by p.id), '{}') into l from public.bulkhead_persons p
    where old_name = any (p.groups) and not p.id = any (p_members);
  select coalesce(array_agg(p.id order by p.id), '{}') into j from public.bulkhead_persons p
    where p.id = any (p_members) and not old_name = any (p.groups);
  update public.bulkhead_persons p set groups = array_remove(p.groups, old_name), updated_at = now()
    where old_name = any (p.groups);
  update public.bulkhead_persons p set groups = array_append(p.groups, g.display_name), updated_at = now()
    where p.id = any (p_members);
  return query select g.id, p_id is null, j, l;
end $$;
revoke all on function bulkhead_scim_put_group(text, text, text, text, text[]) from public;

create function bulkhead_scim_delete_group(p_token text, p_id text) returns text[]
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  g public.bulkhead_scim_groups;
  l text[];
begin
  perform public.bulkhead_scim_proof(p_token);
  delete from public.bulkhead_scim_groups x where x.id = p_id returning * into g;
  if not found then
    raise exception 'no group %', p_id using errcode = 'no_data_found';
  end if;
  with u as (update public.bulkhead_persons p set groups = array_remove(p.groups, g.display_name), updated_at = now()
      where g.display_name = any (p.groups) returning p.id)
    select coalesce(array_agg(u.id order by u.id), '{}') into l from u;
  return l;
end $$;
revoke all on function bulkhead_scim_delete_group(text, text) from public;
