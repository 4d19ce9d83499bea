import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { discoverDeployables } from '@bulkhead/deployables';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSql, type Sql } from './connect.ts';
import {
  ensureLogin,
  FOREIGN_DATABASE_REFUSAL,
  FOREIGN_DATABASES,
  loginRole,
  sessionHazards,
} from './roles.ts';
import { createTestDatabase, type TestDatabase } from './test-database.ts';

/**
 * Issue 42, item 8: logins cannot reconfigure themselves. Tried under each deployable's own login, and
 * under logins made for one test (what one of them does to itself must not reach the shared ones).
 */
const root = fileURLToPath(new URL('../../../', import.meta.url));
const NAMES = [...discoverDeployables(root).map((d) => d.name), 'sealer'];
const PASSWORD = 'bulkhead-test';
let db: TestDatabase;
const own: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  for (const name of NAMES) await db.as(name, name === 'sealer' ? { kind: 'sealer' } : undefined);
}, 120_000);
afterAll(async () => {
  for (const login of own) await db.admin.unsafe(`drop role if exists ${login}`);
  await db?.drop();
});

/** A URL of the test database (or of `database`) for `login`. */
function urlOf(login: string, database?: string): string {
  const url = new URL(db.url);
  url.username = login;
  url.password = PASSWORD;
  if (database) url.pathname = `/${database}`;
  return url.toString();
}

/** Runs `work` on a connection of its own as `login`, closed afterwards. */
async function connected<T>(login: string, work: (sql: Sql) => Promise<T>, database?: string): Promise<T> {
  const sql = createSql(urlOf(login, database), { max: 1 });
  try {
    return await work(sql);
  } finally {
    await sql.end({ timeout: 2 });
  }
}

/** What the database answered `statement`: 'ok' or its message. */
async function answer(sql: Sql, statement: string): Promise<string> {
  try {
    await sql.unsafe(statement);
    return 'ok';
  } catch (err) {
    return (err as Error).message;
  }
}

/** A login of `deployable` for this test alone, as `bulkhead db roles --login` makes one. */
async function freshLogin(deployable: string): Promise<string> {
  const login = `bh_login_${randomBytes(4).toString('hex')}`;
  own.push(login);
  expect(await ensureLogin(db.admin, deployable, login, PASSWORD)).toEqual({ created: true, notSet: [] });
  return login;
}

const appendEvent = `insert into audit_events (server, method, outcome, duration_ms, request_id)
  values ('x', 'tools/call', 'ok', 1, 'reconfigured')`;

it('every login carries work_mem and temp_file_limit from its administrator, and cannot lift temp_file_limit', async () => {
  for (const name of NAMES)
    await connected(loginRole(name), async (sql) => {
      const [row] = await sql<{ w: string; t: string }[]>`
        select current_setting('work_mem') as w, current_setting('temp_file_limit') as t`;
      expect([name, row]).toEqual([name, { w: '16MB', t: '256MB' }]);
      expect([name, await answer(sql, 'set temp_file_limit = -1')]).toEqual([
        name,
        'permission denied to set parameter "temp_file_limit"',
      ]);
      expect([name, await answer(sql, 'alter role current_user set temp_file_limit = -1')]).toEqual([
        name,
        'permission denied to set parameter "temp_file_limit"',
      ]);
      // The limits are the administrator's: no hazard.
      expect([name, await sessionHazards(sql)]).toEqual([name, []]);
    });
});

it('no login connects to the databases every cluster has, and none can undo that', async () => {
  for (const name of NAMES)
    for (const database of FOREIGN_DATABASES)
      expect([
        name,
        database,
        await connected(loginRole(name), (sql) => answer(sql, 'select 1'), database),
      ]).toEqual([
        name,
        database,
        `could not access file "${FOREIGN_DATABASE_REFUSAL}": No such file or directory`,
      ]);
  const login = await freshLogin('dev-knowledge');
  await connected(login, async (sql) => {
    expect(
      await answer(sql, `alter role current_user in database postgres reset session_preload_libraries`),
    ).toBe('permission denied to set parameter "session_preload_libraries"');
    // RESET ALL keeps what only a superuser may clear: the refusal and temp_file_limit stay.
    expect(await answer(sql, `alter role current_user in database postgres reset all`)).toBe('ok');
    expect(await answer(sql, `alter role current_user reset all`)).toBe('ok');
  });
  const stored = await db.admin<{ c: string }[]>`
    select coalesce(d.datname, '*') || ':' || unnest(s.setconfig) as c from pg_db_role_setting s
    left join pg_database d on d.oid = s.setdatabase
    where s.setrole = ${login}::regrole order by 1`;
  expect(stored.map((r) => r.c)).toEqual([
    '*:temp_file_limit=256MB',
    `postgres:session_preload_libraries="${FOREIGN_DATABASE_REFUSAL}"`,
    `template1:session_preload_libraries="${FOREIGN_DATABASE_REFUSAL}"`,
  ]);
  expect(await connected(login, (sql) => answer(sql, 'select 1'), 'postgres')).toBe(
    `could not access file "${FOREIGN_DATABASE_REFUSAL}": No such file or directory`,
  );
});

it('a login that stores a setting for itself is refused by the database on every audit event, and by the servers at start', async () => {
  const login = await freshLogin('customer');
  await connected(login, async (sql) => {
    expect(await answer(sql, appendEvent)).toBe('ok');
    // PostgreSQL lets any role do this to itself; nothing can forbid it.
    expect(await answer(sql, `alter role current_user set work_mem = '1GB'`)).toBe('ok');
    // The same connection: its next audit event (every call writes one) is refused.
    expect(await answer(sql, appendEvent)).toBe(
      `login role ${login} has reconfigured itself (ALTER ROLE … SET work_mem=1GB): it is refused until an administrator runs ALTER ROLE ${login} RESET ALL and \`bulkhead db roles --login\` again`,
    );
  });
  await connected(login, async (sql) => {
    expect(await sessionHazards(sql)).toEqual([
      'settings are stored for the login role (work_mem=1GB), applied to every connection it opens: clear them with ALTER ROLE … RESET ALL',
    ]);
    expect(await answer(sql, `alter role current_user set search_path = pg_catalog`)).toBe('ok');
    expect(await answer(sql, appendEvent)).toMatch(
      /^login role .* has reconfigured itself \(ALTER ROLE … SET search_path=pg_catalog, work_mem=1GB\)/,
    );
  });
  // What the message says to do.
  await db.admin.unsafe(`alter role ${login} reset all`);
  expect(await ensureLogin(db.admin, 'customer', login)).toEqual({ created: false, notSet: [] });
  await connected(login, async (sql) => {
    expect(await sessionHazards(sql)).toEqual([]);
    expect(await answer(sql, appendEvent)).toBe('ok');
  });
});

it('a login can still change its own password (PostgreSQL cannot forbid it): its own server is then locked out, nothing more', async () => {
  const login = await freshLogin('ops');
  await connected(login, async (sql) => {
    expect(await answer(sql, `alter role current_user password 'another-password'`)).toBe('ok');
    // The password is not a setting: the database's own check does not see it.
    expect(await answer(sql, appendEvent)).toBe('ok');
  });
  const [auth] = await db.admin<{ method: string }[]>`
    select auth_method as method from pg_hba_file_rules
    where 'all' = any (user_name) and address = '127.0.0.1' and type = 'host' order by line_number limit 1`;
  // On a cluster that checks passwords, the old one no longer opens a connection.
  if (auth?.method !== 'trust')
    expect(await connected(login, (sql) => answer(sql, 'select 1'))).toBe(
      `password authentication failed for user "${login}"`,
    );
});
