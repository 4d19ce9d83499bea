import { applyPrivileges, ensureGroupRoles, groupRole, roleSpecs, type Sql } from '@bulkhead/db';
import { discoverDeployables } from '@bulkhead/deployables';
import { repoRoot } from './root.ts';

/** The role specs of every deployable under `servers/`, plus the audit sealer. */
export function deployableRoles() {
  return roleSpecs(discoverDeployables(repoRoot));
}

/** After new migrations: give the group roles their rights on the new tables too (when the roles exist). */
export async function refreshPrivileges(sql: Sql): Promise<boolean> {
  const specs = deployableRoles();
  const [any] =
    await sql`select 1 from pg_roles where rolname in ${sql(specs.map((s) => groupRole(s.name)))}`;
  if (!any) return false;
  await ensureGroupRoles(sql, specs);
  await applyPrivileges(sql, specs);
  return true;
}
