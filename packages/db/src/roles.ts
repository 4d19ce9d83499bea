import type { Sql } from './connect.ts';
import { schemaOwner } from './owner.ts';

/** What `db roles` needs to know of one deployable to give its group role exactly what it needs. */
export interface RoleSpec {
  name: string;
  kind: 'mcp' | 'console' | 'sealer';
  /** An MCP server with gated tools: files approvals, runs them once decided, delivers its outbox. */
  gated?: boolean;
  /** The deployable's own grants and policies (its `grants.sql`), run after the kit's. */
  grantsSql?: string | null;
}

/** The audit sealer: reads the log and writes seals, nothing else. Not a folder under `servers/`. */
export const SEALER: RoleSpec = { name: 'sealer', kind: 'sealer' };

/** The NOLOGIN group role of a deployable: `bulkhead_admin`, `bulkhead_dev_knowledge`, … */
export function groupRole(deployable: string): string {
  return `bulkhead_${deployable.replaceAll('-', '_')}`;
}

/** The login role `pnpm start` and the tests create for a deployable. */
export function loginRole(deployable: string): string {
  return `${groupRole(deployable)}_login`;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Runs `statement` (built with postgres.js, identifiers through `sql(...)`), retrying catalog races between sessions. */
async function retrying<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      const code = (err as { code?: string }).code;
      // Two sessions creating the same role or membership at once: one of them sees one of these.
      const race = code === '42710' || code === '23505' || code === 'XX000' || code === '40001';
      if (!race || attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 20 * attempt));
    }
  }
}

/** Creates the NOLOGIN group roles that are missing (needs CREATEROLE) and records them as deployables. */
export async function ensureGroupRoles(sql: Sql, specs: readonly RoleSpec[]): Promise<string[]> {
  const created: string[] = [];
  for (const spec of specs) {
    const role = groupRole(spec.name);
    const [exists] = await sql`select 1 from pg_roles where rolname = ${role}`;
    if (!exists) {
      await retrying(async () => {
        const [again] = await sql`select 1 from pg_roles where rolname = ${role}`;
        if (!again) await sql`create role ${sql(role)} nologin`;
      });
      created.push(role);
    }
    await sql`
      insert into bulkhead_deployables (name, role, kind) values (${spec.name}, ${role}, ${spec.kind})
      on conflict (name) do update set role = excluded.role, kind = excluded.kind`;
    // The CLI, connected as the schema owner, decides approvals under the console's role (`SET LOCAL
    // ROLE`), exactly as the console does: the owner may take that role, it does not need to inherit it.
    if (spec.kind === 'console') {
      const owner = await schemaOwner(sql);
      if (!owner.superuser)
        await retrying(async () => {
          const [member] = await sql<
            { m: boolean }[]
          >`select pg_has_role(${owner.role}, ${role}, 'MEMBER') as m`;
          if (!member!.m) await sql`grant ${sql(role)} to ${sql(owner.role)}`;
        });
    }
  }
  return created;
}

type Tx = Parameters<Parameters<Sql['begin']>[1]>[0];

/** A policy of the kit's: dropped and created again, so that applying twice changes nothing. */
async function policy(
  tx: Tx,
  name: string,
  table: string,
  command: 'all' | 'select' | 'insert',
  role: string,
  using: string | null,
  check: string | null,
): Promise<void> {
  await tx`drop policy if exists ${tx(name)} on ${tx(table)}`;
  const clauses = [using ? `using (${using})` : '', check ? `with check (${check})` : ''].join(' ');
  await tx.unsafe(`create policy "${name}" on "${table}" for ${command} to "${role}" ${clauses}`);
}

/**
 * Gives each deployable's group role exactly what it needs in this database, and nothing else: every
 * earlier grant of the role is revoked first, then the kit's grants for its kind are given (audit
 * append, token check, approvals and outbox for gated servers, decisions and sessions for the console,
 * the seal for the sealer), then the deployable's own `grants.sql` (its business tables, column grants
 * and row policies). Idempotent; needs ownership of the tables, not CREATEROLE.
 */
export async function applyPrivileges(sql: Sql, specs: readonly RoleSpec[]): Promise<void> {
  // The grants on the database itself update one shared catalog row: two sessions applying at once (a
  // test's fixture servers, two `db roles`) can see "tuple concurrently updated"; the whole is retried.
  await retrying(() => applyPrivilegesOnce(sql, specs));
}

async function applyPrivilegesOnce(sql: Sql, specs: readonly RoleSpec[]): Promise<void> {
  await sql.begin(async (tx) => {
    // No session of a deployable creates anything: temporary objects would shadow the names the kit's
    // functions use, and the schema is the owner's. (Run by the database's owner or a superuser; the
    // servers refuse to start where this did not take.)
    const [db] = await tx<{ name: string }[]>`select current_database() as name`;
    // Functions the servers got after 0053 (0062's forward lag, 0065's pins, 0067's fence, 0068's
    // policy), granted where the schema has them: on a database behind this code the servers refuse to
    // start, and `db migrate` applies these grants again once it is current.
    const functions = new Set(
      (
        await tx<{ sig: string }[]>`
          select p.oid::regprocedure::text as sig from pg_proc p where p.pronamespace = 'public'::regnamespace`
      ).map((f) => f.sig),
    );
    await tx`revoke temporary on database ${tx(db!.name)} from public`;
    await tx`revoke create on schema public from public`;
    for (const spec of specs) {
      const role = groupRole(spec.name);
      const r = tx(role);
      await tx`revoke all on all tables in schema public from ${r}`;
      await tx`revoke all on all sequences in schema public from ${r}`;
      await tx`revoke all on all functions in schema public from ${r}`;
      await tx`revoke create, temporary on database ${tx(db!.name)} from ${r}`;
      await tx`revoke create on schema public from ${r}`;
      await tx`grant usage on schema public to ${r}`;
      await tx`grant select on bulkhead_deployables to ${r}`;
      if (spec.kind === 'sealer') {
        await tx`grant select on audit_events to ${r}`;
        await policy(tx, `bh_${role}_read`, 'audit_events', 'select', role, 'true', null);
        await tx`grant select on sequence audit_events_seq to ${r}`;
        await tx`grant select, insert on audit_seals to ${r}`;
        await tx`grant select, insert on audit_signed_checkpoints to ${r}`;
        await tx`grant select, insert on audit_checkpoint_timestamps to ${r}`;
        await tx`grant select on audit_prune_checkpoint to ${r}`;
        // Forwarding to a SIEM: how far each destination acknowledged, and who forwards it now (0062).
        await tx`grant select, insert on audit_forward_positions to ${r}`;
        await tx`grant update (seal_no, sent, forwarded, holder, expires_at, updated_at)
          on audit_forward_positions to ${r}`;
        await tx`grant execute on function bulkhead_audit_forward_lag() to ${r}`;
        // The election (a leased row, not a lock any role could take) and the count of seals made.
        await tx`grant select, update (holder, expires_at) on audit_sealer_lease to ${r}`;
        await tx`grant select, update on sequence audit_seals_made to ${r}`;
        // `audit verify` as the sealer: approvals that ran without their decision event, and nothing else of them.
        await tx`grant execute on function bulkhead_audit_undecided_approvals() to ${r}`;
        await tx`grant execute on function bulkhead_login_settings_changed() to ${r}`;
        continue;
      }
      // Every server and the console append to the audit log (the database stamps the server name)
      // and check presented tokens through the function that answers only for their own audience.
      await tx`grant insert on audit_events to ${r}`;
      // Its number through the function the sealer's horizon rests on (0048). A number drawn from the
      // sequence directly (`currval` tells a writer the number of its event) is a gap, never an event.
      await tx`grant usage on sequence audit_events_seq to ${r}`;
      await tx`grant execute on function bulkhead_audit_number() to ${r}`;
      await tx`grant execute on function bulkhead_login_settings_changed() to ${r}`;
      await policy(tx, `bh_${role}_append`, 'audit_events', 'insert', role, null, 'true');
      await tx`grant execute on function bulkhead_verify_token(text, bytea, text, text) to ${r}`;
      await tx`grant execute on function bulkhead_audit_backlog() to ${r}`;
      if (functions.has('bulkhead_audit_forward_lag()'))
        await tx`grant execute on function bulkhead_audit_forward_lag() to ${r}`;
      if (spec.kind === 'mcp') {
        // Counts are exchanged through a function; no privilege on the table, so no lock on it either.
        await tx`drop policy if exists ${tx(`bh_${role}_own`)} on bulkhead_rate_limits`;
        await tx`grant execute on function
          bulkhead_rate_limit_exchange(text[], float8[], integer[], text[], timestamptz, boolean) to ${r}`;
        // Its switched-off tools, through the function that answers only for its own server.
        await tx`grant execute on function bulkhead_switched_off_tools(text) to ${r}`;
        // Its drift from its pins (of an upstream MCP server), recorded and read for its own server only.
        if (functions.has('bulkhead_mcp_accepted(text)')) {
          await tx`grant execute on function
            bulkhead_record_mcp_drift(text, text, text, text, text, jsonb, jsonb, jsonb, text) to ${r}`;
          await tx`grant execute on function bulkhead_mcp_accepted(text) to ${r}`;
        }
        // The customer its call's token proves (a customer-bound server's row policies call it).
        await tx`grant execute on function bulkhead_fenced_customer() to ${r}`;
        // The approved policy set's text, and nothing else of the policy table (0068).
        if (functions.has('bulkhead_active_policy()'))
          await tx`grant execute on function bulkhead_active_policy() to ${r}`;
        if (functions.has('bulkhead_fenced_customer(text)'))
          await tx`grant execute on function bulkhead_fenced_customer(text) to ${r}`;
        // The groups of a caller's token, for policies that weigh them (0073): live tokens of its own only.
        if (functions.has('bulkhead_token_groups(text)'))
          await tx`grant execute on function bulkhead_token_groups(text) to ${r}`;
      }
      if (spec.kind === 'mcp' && spec.gated) {
        const own = 'server = (select bulkhead_current_deployable())';
        await tx`grant select, insert on bulkhead_approvals to ${r}`;
        await tx`grant update (status, executed_at, executed_by, duration_ms, result, error, failure)
          on bulkhead_approvals to ${r}`;
        await policy(tx, `bh_${role}_own`, 'bulkhead_approvals', 'all', role, own, own);
        await tx`grant select, insert on bulkhead_outbox to ${r}`;
        await tx`grant update (status, attempts, next_attempt_at, delivered_at, last_error) on bulkhead_outbox to ${r}`;
        await policy(tx, `bh_${role}_own`, 'bulkhead_outbox', 'all', role, own, own);
        await tx`grant select, insert on bulkhead_outbox_attempts to ${r}`;
        const ownRow = 'exists (select 1 from bulkhead_outbox o where o.id = outbox_id)';
        await policy(tx, `bh_${role}_own`, 'bulkhead_outbox_attempts', 'all', role, ownRow, ownRow);
        // A policy's durable counts (0073): through the function that counts for its own server only.
        if (functions.has('bulkhead_policy_usage_today(text,text,boolean)'))
          await tx`grant execute on function bulkhead_policy_usage_today(text, text, boolean) to ${r}`;
      }
      if (spec.kind === 'console') await grantConsole(tx, role, functions);
      if (spec.grantsSql) await tx.unsafe(spec.grantsSql);
    }
  });
}

/**
 * Connections one login role may hold at once (`CONNECTION LIMIT`), unless told otherwise: one server
 * replica holds up to 13 (see "Capacity" in docs/concepts.md), so three replicas fit, and no single
 * login can take every connection of the cluster from the others.
 */
export const DEFAULT_CONNECTION_LIMIT = 40;

/**
 * Makes `login` a member of `deployable`'s group role and sets its connection limit and the settings
 * it may not choose itself ({@link limitLogin}: `notSet` names those only a superuser could store); with
 * a password, creates the login role if missing and sets it. Needs CREATEROLE (or a superuser).
 */
export async function ensureLogin(
  sql: Sql,
  deployable: string,
  login: string,
  password?: string,
  options: { connectionLimit?: number } = {},
): Promise<{ created: boolean; notSet: string[] }> {
  const group = groupRole(deployable);
  const [g] = await sql`select 1 from pg_roles where rolname = ${group}`;
  if (!g) throw new Error(`the group role ${group} does not exist: run \`bulkhead db roles\` first`);
  let created = false;
  await retrying(async () => {
    const [exists] = await sql`select 1 from pg_roles where rolname = ${login}`;
    if (!exists) {
      if (password === undefined)
        throw new Error(`the login role ${login} does not exist: create it, or pass --password-file`);
      const [stmt] = await sql<
        { s: string }[]
      >`select format('create role %I login password %L', ${login}::text, ${password}::text) as s`;
      await sql.unsafe(stmt!.s);
      created = true;
    } else if (password !== undefined) {
      const [stmt] = await sql<
        { s: string }[]
      >`select format('alter role %I password %L', ${login}::text, ${password}::text) as s`;
      await sql.unsafe(stmt!.s);
    }
  });
  await retrying(async () => {
    const [member] = await sql<{ m: boolean }[]>`
      select pg_has_role(${login}, ${group}, 'MEMBER') as m`;
    if (!member!.m) await sql`grant ${sql(group)} to ${sql(login)}`;
  });
  const limit = options.connectionLimit ?? DEFAULT_CONNECTION_LIMIT;
  const [current] = await sql<
    { limit: number }[]
  >`select rolconnlimit as limit from pg_roles where rolname = ${login}`;
  // Two test files setting the same login's limit at once: one sees "tuple concurrently updated".
  if (current!.limit !== limit)
    await retrying(() => sql.unsafe(`alter role ${quoteIdent(login)} connection limit ${Math.trunc(limit)}`));
  return { created, notSet: await limitLogin(sql, login) };
}

/**
 * Databases every cluster has, where no login of Bulkhead's has any business: PUBLIC may connect to them
 * and create temporary objects there, and taking that from PUBLIC is not Bulkhead's to do in a shared
 * cluster. Other databases of the cluster are their owners' to close (docs/database.md).
 */
export const FOREIGN_DATABASES = ['postgres', 'template1'] as const;

/**
 * The one sentence a login meets connecting to one of {@link FOREIGN_DATABASES}: stored as the login's
 * `session_preload_libraries` there (a setting only a superuser may set or clear), it names a library
 * that does not exist, so PostgreSQL ends the connection at its start and quotes it.
 */
export const FOREIGN_DATABASE_REFUSAL = 'bulkhead: this login may connect only to its own database';

/**
 * Stores for `login` what it may not choose for itself: the limits of `bulkhead_login_limits()`
 * (`temp_file_limit`, which only a superuser may set, and `work_mem`), and in each of
 * {@link FOREIGN_DATABASES} a setting that ends its connections there. Returns what could not be set
 * (not run by a superuser: a managed database's administrator), as `name=value` (`database:name=value`).
 */
async function limitLogin(sql: Sql, login: string): Promise<string[]> {
  const notSet: string[] = [];
  const stored = async (database: string | null) =>
    (
      await sql<{ c: string }[]>`
        select unnest(s.setconfig) as c from pg_catalog.pg_db_role_setting s
        where s.setrole = (select oid from pg_catalog.pg_roles where rolname = ${login})
          and s.setdatabase = coalesce((select oid from pg_catalog.pg_database where datname = ${database}), 0)`
    ).map((r) => r.c);
  const set = async (what: string, statement: string) => {
    try {
      await retrying(() => sql.unsafe(statement));
    } catch (err) {
      if ((err as { code?: string }).code !== '42501') throw err;
      notSet.push(what);
    }
  };
  const own = await stored(null);
  for (const { name, setting } of await sql<{ name: string; setting: string }[]>`
    select name, setting from public.bulkhead_login_limits()`)
    if (!own.includes(`${name}=${setting}`))
      await set(
        `${name}=${setting}`,
        `alter role ${quoteIdent(login)} set ${quoteIdent(name)} = '${setting.replaceAll("'", "''")}'`,
      );
  const [here] = await sql<{ name: string }[]>`select current_database() as name`;
  const refusal = `session_preload_libraries="${FOREIGN_DATABASE_REFUSAL}"`;
  for (const { name } of await sql<{ name: string }[]>`
    select datname as name from pg_catalog.pg_database
    where datname = any (${[...FOREIGN_DATABASES]}) and datallowconn and datname <> ${here!.name}`)
    if (!(await stored(name)).includes(refusal))
      await set(
        `${name}:session_preload_libraries`,
        `alter role ${quoteIdent(login)} in database ${quoteIdent(name)} set session_preload_libraries = '${FOREIGN_DATABASE_REFUSAL}'`,
      );
  return notSet;
}

/** True when the connected role is a superuser or owns the schema (servers refuse to run so). */
export async function connectedAsOwner(
  sql: Sql,
): Promise<{ owner: boolean; role: string; deployable: string | null }> {
  const [row] = await sql<{ owner: boolean; role: string; deployable: string | null }[]>`
    select bulkhead_role_is_owner(current_user) as owner, current_user as role,
      bulkhead_current_deployable() as deployable`;
  return row!;
}

/** The role specs of the discovered deployables, plus the audit sealer. */
export function roleSpecs(
  deployables: readonly { name: string; kind: 'mcp' | 'console'; gated: boolean; grantsSql: string | null }[],
): RoleSpec[] {
  return [
    ...deployables.map((d) => ({ name: d.name, kind: d.kind, gated: d.gated, grantsSql: d.grantsSql })),
    SEALER,
  ];
}

/**
 * What the connected role could change about its own sessions that the kit's guarantees rest on: a
 * role that can create temporary objects or objects in a schema could shadow names, and settings
 * stored for it (`ALTER ROLE … SET`, which any role may do to itself) apply to every new connection —
 * all but the limits its administrator stored (`bulkhead_login_limits()`). Each entry is a sentence; an
 * empty list means none. Servers refuse to start otherwise; once running, the database refuses their
 * audit events (every call's) while the login is so reconfigured (0048).
 */
export async function sessionHazards(sql: Sql): Promise<string[]> {
  const [row] = await sql<
    { role: string; temp: boolean; create: boolean; schemas: string[]; settings: string[] }[]
  >`
    select current_user as role,
      has_database_privilege(current_user, current_database(), 'TEMP') as temp,
      has_database_privilege(current_user, current_database(), 'CREATE') as create,
      array(select n.nspname::text from pg_catalog.pg_namespace n
        where has_schema_privilege(current_user, n.oid, 'CREATE')
          and n.nspname !~ '^pg_(toast_)?temp_' order by 1) as schemas,
      public.bulkhead_login_settings_changed() as settings`;
  const r = row!;
  const hazards: string[] = [];
  if (r.temp)
    hazards.push(
      `${r.role} can create temporary tables in this database (run \`bulkhead db roles\` as the database's owner: it revokes TEMP from PUBLIC)`,
    );
  if (r.create)
    hazards.push(`${r.role} can create schemas in this database (REVOKE CREATE ON DATABASE … FROM it)`);
  if (r.schemas.length)
    hazards.push(
      `${r.role} can create objects in schema ${r.schemas.join(', ')} (REVOKE CREATE ON SCHEMA … FROM PUBLIC and from it)`,
    );
  if (r.settings.length)
    hazards.push(
      `settings are stored for the login role (${r.settings.join(', ')}), applied to every connection it opens: clear them with ALTER ROLE … RESET ALL`,
    );
  return hazards;
}

/**
 * The functions of the schema whose search path is not pinned as `pg_catalog, public, pg_temp`
 * (pg_catalog first, the session's temporary schema explicitly last): a caller's temporary table,
 * view or sequence could stand in for a name such a function uses. Empty on a sound schema.
 */
export async function unpinnedFunctions(sql: Sql): Promise<string[]> {
  const rows = await sql<{ fn: string }[]>`
    select p.oid::pg_catalog.regprocedure::text as fn from pg_catalog.pg_proc p
    where p.pronamespace = 'public'::pg_catalog.regnamespace
      and not coalesce((select string_to_array(replace(substr(c, length('search_path=') + 1), ' ', ''), ',')
          from unnest(p.proconfig) c where c like 'search_path=%') = array['pg_catalog', 'public', 'pg_temp'], false)
    order by 1`;
  return rows.map((r) => r.fn);
}

/**
 * The console's grants: decisions and sign-in records, the OAuth authorization server's clients, and
 * sessions, grants, the token table, the tool switches and the whole audit log only through functions
 * that check an approver's proof (a session or approver token secret), never a token id.
 */
async function grantConsole(tx: Tx, role: string, functions: ReadonlySet<string>): Promise<void> {
  const r = tx(role);
  await tx`grant select on audit_events to ${r}`;
  await policy(tx, `bh_${role}_approvals`, 'audit_events', 'select', role, 'approval_id is not null', null);
  await tx`grant select on bulkhead_approvals to ${r}`;
  await tx`grant update (status, decided_by, decided_by_token_id, decision_reason, decided_arguments_hash,
      decision_event_id) on bulkhead_approvals to ${r}`;
  await policy(tx, `bh_${role}_all`, 'bulkhead_approvals', 'all', role, 'true', 'true');
  await tx`grant select on bulkhead_outbox to ${r}`;
  await policy(tx, `bh_${role}_read`, 'bulkhead_outbox', 'select', role, 'true', null);
  await tx`grant select on bulkhead_caught_mail to ${r}`;
  // Sessions only through functions: opened with an approver token's secret, found and ended with the
  // session's own secret (issue 42). The console keeps no authority in rows its login can read.
  await tx`grant execute on function bulkhead_console_sign_in(text, text, text, double precision) to ${r}`;
  await tx`grant execute on function bulkhead_console_session(text) to ${r}`;
  await tx`grant execute on function bulkhead_console_sign_out(text) to ${r}`;
  // OpenID Connect: a sign-in is started, resumed and completed only through functions (state and
  // binding hashed, nonce and ID token checked by the database); persons and the group mapping are
  // readable (no secrets), written only by those functions and the operators' ones.
  await tx`grant execute on function
      bulkhead_oidc_begin(text, text, text, text, text, text, text, text) to ${r}`;
  await tx`grant execute on function bulkhead_oidc_resume(text, text[]) to ${r}`;
  await tx`grant execute on function
      bulkhead_console_oidc_sign_in(text, text, text, text, text, double precision) to ${r}`;
  await tx`grant execute on function bulkhead_console_may_decide(text) to ${r}`;
  // An ID-JAG (0070) is redeemed only through the function that re-reads its claims and its person's rights.
  await tx`grant execute on function
      bulkhead_oauth_idjag_token(text, text, text, text, text, text[], text, bytea, text, timestamptz) to ${r}`;
  await tx`grant execute on function bulkhead_console_proven_person() to ${r}`;
  // My tokens (0071): a person lists, issues (within their groups' rights) and revokes their own MCP
  // tokens through functions that derive the person from the session's secret; separation of duties
  // compares the proven approver with a pending request's token as persons.
  await tx`grant execute on function bulkhead_my_rights(text) to ${r}`;
  await tx`grant execute on function bulkhead_my_tokens(text) to ${r}`;
  await tx`grant execute on function
      bulkhead_my_issue_token(text, text, bytea, text, text, text[], text, timestamptz) to ${r}`;
  await tx`grant execute on function bulkhead_my_revoke_token(text, text) to ${r}`;
  await tx`grant execute on function bulkhead_proven_is_requester(text) to ${r}`;
  await tx`grant select on bulkhead_persons to ${r}`;
  await tx`grant select on bulkhead_groups to ${r}`;
  await tx`grant select, insert, delete on bulkhead_console_sign_in_forms to ${r}`;
  await tx`grant select, insert, update, delete on bulkhead_console_sign_in_failures to ${r}`;
  await tx`grant execute on function bulkhead_token_owner(text) to ${r}`;
  // A decision or a read of the whole audit log names its approver by proof, recorded for the transaction.
  await tx`grant execute on function bulkhead_console_proof(text) to ${r}`;
  // Policy sets, proposed and decided by operators who prove themselves (0068); read in full.
  await tx`grant execute on function bulkhead_policy_propose(text, text) to ${r}`;
  await tx`grant execute on function bulkhead_policy_decide(text, text, boolean, text) to ${r}`;
  await tx`grant execute on function bulkhead_active_policy() to ${r}`;
  await tx`grant select on bulkhead_policy_sets to ${r}`;
  await tx`grant execute on function bulkhead_console_prove(text) to ${r}`;
  await tx`grant execute on function bulkhead_console_proven() to ${r}`;
  // Votes on a request that needs more than one person (0073): cast through the approvals guard, under
  // the proof of the transaction, with its decision event; read for the approval page's progress.
  if (functions.has('bulkhead_approval_vote(text,uuid,text)')) {
    await tx`grant execute on function bulkhead_console_proven_voter() to ${r}`;
    await tx`grant execute on function bulkhead_approval_vote(text, uuid, text) to ${r}`;
    await tx`grant execute on function bulkhead_approval_votes_of(text) to ${r}`;
  }
  // The OAuth authorization server: clients are its own; grants, codes and refresh tokens are written
  // only through functions that take an approver's proof or the grant's own secrets.
  await tx`grant select, insert, update on bulkhead_oauth_clients to ${r}`;
  await tx`grant select on bulkhead_oauth_grants to ${r}`;
  await tx`grant select on bulkhead_oauth_codes to ${r}`;
  await tx`grant update (used_at) on bulkhead_oauth_codes to ${r}`;
  await tx`grant select on bulkhead_oauth_refresh_tokens to ${r}`;
  await tx`grant update (used_at) on bulkhead_oauth_refresh_tokens to ${r}`;
  await tx`grant execute on function
      bulkhead_oauth_grant(text, text, text, text, text[], text, text, text, text, text, integer) to ${r}`;
  await tx`grant execute on function
      bulkhead_oauth_issue_token(text, text, text, text, bytea, text, timestamptz, text, bytea, timestamptz) to ${r}`;
  await tx`grant execute on function bulkhead_oauth_revoke_grant(text, text) to ${r}`;
  // Operators (approver tokens with tokens:manage): tokens, grants and tool switches through functions
  // that take the operator's proof; the whole audit log and its seals only in a transaction where an
  // operator proved themselves (`bulkhead_console_prove`).
  await tx`grant execute on function bulkhead_reading_as_operator() to ${r}`;
  await tx`grant execute on function bulkhead_operator_tokens(text) to ${r}`;
  await tx`grant execute on function
      bulkhead_operator_issue_token(text, text, bytea, text, text, text[], text, text, timestamptz) to ${r}`;
  await tx`grant execute on function bulkhead_operator_revoke_token(text, text) to ${r}`;
  await tx`grant execute on function bulkhead_operator_revoke_grant(text, text) to ${r}`;
  await tx`grant execute on function bulkhead_operator_revoke_person(text, text) to ${r}`;
  await tx`grant execute on function bulkhead_operator_tool_switches(text) to ${r}`;
  await tx`grant execute on function bulkhead_operator_switch_tool(text, text, text, boolean, text) to ${r}`;
  await tx`grant execute on function bulkhead_operator_groups(text) to ${r}`;
  await tx`grant execute on function
      bulkhead_operator_set_group(text, text, text[], boolean, text[]) to ${r}`;
  await tx`grant execute on function bulkhead_operator_remove_group(text, text) to ${r}`;
  await tx`grant execute on function bulkhead_operator_mcp_drift(text) to ${r}`;
  await tx`grant execute on function bulkhead_operator_accept_mcp_drift(text, text, text, text, text) to ${r}`;
  // SCIM (0069): every function takes the IdP's bearer and checks it against the hash the owner stored;
  // setting that hash is the owner's alone.
  await tx`grant execute on function bulkhead_scim_check(text) to ${r}`;
  await tx`grant execute on function bulkhead_scim_users(text, text, text) to ${r}`;
  await tx`grant execute on function
      bulkhead_scim_put_user(text, text, text, text, text, text, text, boolean, text) to ${r}`;
  await tx`grant execute on function bulkhead_scim_delete_user(text, text, text) to ${r}`;
  await tx`grant execute on function bulkhead_scim_groups(text, text, text) to ${r}`;
  await tx`grant execute on function bulkhead_scim_put_group(text, text, text, text, text[]) to ${r}`;
  await tx`grant execute on function bulkhead_scim_delete_group(text, text) to ${r}`;
  await policy(
    tx,
    `bh_${role}_operator`,
    'audit_events',
    'select',
    role,
    '(select bulkhead_reading_as_operator())',
    null,
  );
  await tx`grant select on audit_seals to ${r}`;
  await tx`grant select on audit_prune_checkpoint to ${r}`;
}
