import type { Sql } from './connect.ts';

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
  await sql.begin(async (tx) => {
    for (const spec of specs) {
      const role = groupRole(spec.name);
      const r = tx(role);
      await tx`revoke all on all tables in schema public from ${r}`;
      await tx`revoke all on all sequences in schema public from ${r}`;
      await tx`revoke all on all functions in schema public from ${r}`;
      await tx`grant usage on schema public to ${r}`;
      await tx`grant select on bulkhead_deployables to ${r}`;
      if (spec.kind === 'sealer') {
        await tx`grant select on audit_events to ${r}`;
        await policy(tx, `bh_${role}_read`, 'audit_events', 'select', role, 'true', null);
        await tx`grant select on sequence audit_events_seq to ${r}`;
        await tx`grant select, insert on audit_seals to ${r}`;
        await tx`grant select on audit_prune_checkpoint to ${r}`;
        continue;
      }
      // Every server and the console append to the audit log (the database stamps the server name)
      // and check presented tokens through the function that answers only for their own audience.
      await tx`grant insert on audit_events to ${r}`;
      await tx`grant usage on sequence audit_events_seq to ${r}`;
      await policy(tx, `bh_${role}_append`, 'audit_events', 'insert', role, null, 'true');
      await tx`grant execute on function bulkhead_verify_token(text, bytea, text, text) to ${r}`;
      await tx`grant execute on function bulkhead_audit_backlog() to ${r}`;
      if (spec.kind === 'mcp') {
        const own = 'server = (select bulkhead_current_deployable())';
        await tx`grant select, insert, update (count), delete on bulkhead_rate_limits to ${r}`;
        await policy(tx, `bh_${role}_own`, 'bulkhead_rate_limits', 'all', role, own, own);
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
      }
      if (spec.kind === 'console') {
        await tx`grant select on audit_events to ${r}`;
        await policy(
          tx,
          `bh_${role}_approvals`,
          'audit_events',
          'select',
          role,
          'approval_id is not null',
          null,
        );
        await tx`grant select on bulkhead_approvals to ${r}`;
        await tx`grant update (status, decided_by, decided_by_token_id, decision_reason, decided_arguments_hash)
          on bulkhead_approvals to ${r}`;
        await policy(tx, `bh_${role}_all`, 'bulkhead_approvals', 'all', role, 'true', 'true');
        await tx`grant select on bulkhead_outbox to ${r}`;
        await policy(tx, `bh_${role}_read`, 'bulkhead_outbox', 'select', role, 'true', null);
        await tx`grant select, insert, update, delete on bulkhead_console_sessions to ${r}`;
        await tx`grant select, insert, delete on bulkhead_console_sign_in_forms to ${r}`;
        await tx`grant select, insert, update, delete on bulkhead_console_sign_in_failures to ${r}`;
        await tx`grant execute on function bulkhead_token_owner(text) to ${r}`;
        await tx`grant execute on function bulkhead_approver(text) to ${r}`;
        // The OAuth authorization server: its own tables, and the token table only through functions.
        await tx`grant select, insert, update on bulkhead_oauth_clients to ${r}`;
        await tx`grant select, insert on bulkhead_oauth_grants to ${r}`;
        await tx`grant update (revoked_at, revoked_reason) on bulkhead_oauth_grants to ${r}`;
        await tx`grant select, insert, delete on bulkhead_oauth_codes to ${r}`;
        await tx`grant update (used_at) on bulkhead_oauth_codes to ${r}`;
        await tx`grant select, insert on bulkhead_oauth_refresh_tokens to ${r}`;
        await tx`grant update (used_at) on bulkhead_oauth_refresh_tokens to ${r}`;
        await tx`grant execute on function bulkhead_approver_can_grant(text) to ${r}`;
        await tx`grant execute on function bulkhead_oauth_issue_token(text, text, bytea, text, timestamptz) to ${r}`;
        await tx`grant execute on function bulkhead_oauth_revoke_grant(text, text) to ${r}`;
        await tx`grant execute on function bulkhead_oauth_token_grant(text, bytea) to ${r}`;
      }
      if (spec.grantsSql) await tx.unsafe(spec.grantsSql);
    }
  });
}

/** Makes `login` a member of `deployable`'s group role; with a password, creates the login role if missing and sets it. */
export async function ensureLogin(
  sql: Sql,
  deployable: string,
  login: string,
  password?: string,
): Promise<{ created: boolean }> {
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
  return { created };
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
