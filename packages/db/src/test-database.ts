import { randomBytes } from 'node:crypto';
import { createSql, type Sql } from './connect.ts';
import { migrate } from './migrate.ts';
import { ensureOwner, OWNER_ROLE } from './owner.ts';
import { applyPrivileges, ensureGroupRoles, ensureLogin, loginRole, type RoleSpec } from './roles.ts';

/** A throwaway, migrated database for one test file. */
export interface TestDatabase {
  /** The schema owner's URL and pool (`bulkhead_owner`, no superuser): for setting up rows and checking results. */
  url: string;
  sql: Sql;
  /** A superuser's URL and pool on the same database: for what only a superuser may do (roles, other sessions). */
  adminUrl: string;
  admin: Sql;
  /**
   * A pool connected as `deployable`'s own login role, the way servers run. A name that is none of
   * the deployables (a test's own fixture server) gets a group role with the kit's grants
   * for `spec` (default: an MCP server with gated tools); its own tables need grants by the test.
   */
  as(deployable: string, spec?: Omit<RoleSpec, 'name'>): Promise<{ url: string; sql: Sql }>;
  drop(): Promise<void>;
}

/**
 * The role specs of the repository's deployables, as the test global setup found them and handed them
 * over (`BULKHEAD_TEST_ROLES`): the database layer knows no repository.
 */
function handedOverRoles(): RoleSpec[] {
  const json = process.env.BULKHEAD_TEST_ROLES;
  if (!json)
    throw new Error('BULKHEAD_TEST_ROLES is not set: run tests through vitest with the global setup');
  return JSON.parse(json) as RoleSpec[];
}
/** Test clusters only: the embedded one lives for one run, the CI one trusts loopback connections. */
const password = 'bulkhead-test';

/**
 * Creates a fresh database on the server behind `BULKHEAD_TEST_ADMIN_URL`
 * (set by the test global setup: the real Postgres in CI or the embedded
 * default; or `options.adminUrl`, a cluster a test set up itself), migrates it, gives every deployable's group role its privileges in
 * it (creating the roles on the cluster if missing), and returns it. The deployables are `options.roles`,
 * or those the global setup found in the repository. Each test
 * file gets its own, so files can run in parallel without seeing each other's rows.
 */
export async function createTestDatabase(
  options: { migrate?: boolean; adminUrl?: string; roles?: readonly RoleSpec[] } = {},
): Promise<TestDatabase> {
  // The test harness's one handshake with the global setup, which sets these variables.
  const adminUrl = options.adminUrl ?? process.env.BULKHEAD_TEST_ADMIN_URL;
  if (!adminUrl)
    throw new Error('BULKHEAD_TEST_ADMIN_URL is not set: run tests through vitest with the global setup');
  const name = `bh_test_${randomBytes(6).toString('hex')}`;
  const admin = createSql(adminUrl, { max: 1 });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const target = new URL(adminUrl);
  target.pathname = `/${name}`;
  const dbAdminUrl = target.toString();
  const dbAdmin = createSql(dbAdminUrl, { max: 4 });
  // As in every default deployment, the schema belongs to a role that is no superuser.
  await ensureOwner(dbAdmin, { password });
  target.username = OWNER_ROLE;
  target.password = password;
  const url = target.toString();
  const sql = createSql(url, { max: 20 });
  const specs = options.roles ?? handedOverRoles();
  if (options.migrate !== false) {
    await migrate(sql);
    await ensureGroupRoles(dbAdmin, specs);
    await applyPrivileges(sql, specs);
  }
  const pools = new Map<string, Promise<{ url: string; sql: Sql }>>();
  const connect = async (deployable: string, spec?: Omit<RoleSpec, 'name'>) => {
    if (!specs.some((s) => s.name === deployable)) {
      const own: RoleSpec = { name: deployable, ...(spec ?? { kind: 'mcp', gated: true }) };
      await ensureGroupRoles(dbAdmin, [own]);
      await applyPrivileges(sql, [own]);
    }
    const login = loginRole(deployable);
    const [exists] = await dbAdmin`select 1 from pg_roles where rolname = ${login}`;
    // The test logins are shared by every test file running at once: a limit well above what they use.
    await ensureLogin(dbAdmin, deployable, login, exists ? undefined : password, { connectionLimit: 150 });
    const roleUrl = new URL(url);
    roleUrl.username = login;
    roleUrl.password = password;
    return { url: roleUrl.toString(), sql: createSql(roleUrl.toString(), { max: 10 }) };
  };
  return {
    url,
    sql,
    adminUrl: dbAdminUrl,
    admin: dbAdmin,
    as(deployable, spec) {
      let pool = pools.get(deployable);
      if (!pool) {
        pool = connect(deployable, spec);
        pools.set(deployable, pool);
      }
      return pool;
    },
    drop: async () => {
      for (const pool of pools.values()) await (await pool.catch(() => undefined))?.sql.end({ timeout: 5 });
      await sql.end({ timeout: 5 });
      await dbAdmin.end({ timeout: 5 });
      const again = createSql(adminUrl, { max: 1 });
      await again.unsafe(`drop database if exists ${name} with (force)`);
      await again.end();
    },
  };
}
