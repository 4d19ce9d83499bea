import { readFile } from 'node:fs/promises';
import {
  applyPrivileges,
  createSql,
  DEFAULT_CONNECTION_LIMIT,
  ensureGroupRoles,
  ensureLogin,
  groupRole,
  type Database,
  type RoleSpec,
  type Sql,
} from '@bulkhead/db';
import { deployableRoles } from '../deployable-roles.ts';
import { parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { CliError, UsageError, type Io } from '../io.ts';
import { describePrivileges, privilegesTable } from '../privileges.ts';

export const rolesCommand: Command = {
  name: 'roles',
  summary: 'create each deployable’s group role with exactly its rights; add login roles',
  help: `Usage: bulkhead db roles [--json]
       bulkhead db roles --login <deployable> <login-role> [--password-file <file>] [--connection-limit <n>]
       bulkhead db roles --table

Creates the NOLOGIN group roles bulkhead_admin, bulkhead_customer,
bulkhead_dev_knowledge, bulkhead_console (one per folder under servers/) and
bulkhead_sealer (the audit sealer), and gives each exactly what its deployable
needs in this database: explicit grants (no "all tables"), column grants where a
table is shared, row-level policies where rows are (customer rows are fenced by
the customer the token names). Every earlier grant of these roles is revoked
first, and PUBLIC's TEMP on the database and CREATE on the schema are revoked
(a session that can create objects could shadow the names the database's own
checks use). Idempotent; run it as a superuser or a role with CREATEROLE (the
schema's owner needs neither), after \`db migrate\` (which re-applies the
grants by itself once the roles exist). On the embedded default it uses the
embedded superuser for the roles by itself.

Options:
  --login <deployable> <login-role>
                    make an existing login role a member of that deployable's
                    group role (servers then connect as the login role)
  --password-file <file>
                    with --login: create the login role if it is missing, and
                    set its password from the file (first line)
  --connection-limit <n>
                    with --login: connections the login role may hold at once
                    (default ${DEFAULT_CONNECTION_LIMIT}: three replicas of a server; -1 for no limit)
  --table           print the roles table of docs/database.md, read from the
                    database's own catalog
  --json            print what was created and granted`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(
      argv,
      {
        login: { type: 'string' },
        'password-file': { type: 'string' },
        'connection-limit': { type: 'string' },
        table: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
      true,
    );
    const specs = deployableRoles();
    if (values.login !== undefined) {
      const request = await readLoginRequest(values.login, positionals, values, specs);
      return withDatabase(env, io, (db) =>
        asRoleAdmin(db, (admin) => addLogin(admin, request, values.json, io)),
      );
    }
    if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
    return withDatabase(env, io, async (db) => {
      if (values.table) {
        io.out(
          privilegesTable(
            await describePrivileges(
              db.sql,
              specs.map((s) => groupRole(s.name)),
            ),
          ),
        );
        return 0;
      }
      return grantGroupRoles(db, specs, values.json, io);
    });
  },
};

/** What `--login` asks for, checked before any connection is opened. */
interface LoginRequest {
  deployable: string;
  login: string;
  /** From --password-file: the login role is created if missing, with this password. */
  password: string | undefined;
  connectionLimit: number;
}

/** The `--login <deployable> <login-role>` arguments and the options that go with them, checked. */
async function readLoginRequest(
  deployable: string,
  positionals: string[],
  values: { 'password-file'?: string | undefined; 'connection-limit'?: string | undefined },
  specs: readonly RoleSpec[],
): Promise<LoginRequest> {
  const login = positionals[0];
  if (!specs.some((s) => s.name === deployable))
    throw new UsageError(
      `--login: unknown deployable "${deployable}"; one of: ${specs.map((s) => s.name).join(', ')}`,
    );
  if (!login || positionals.length > 1 || !/^[a-z_][a-z0-9_]{0,62}$/.test(login))
    throw new UsageError(
      '--login <deployable> <login-role>: give one login role name (lower case, digits, _)',
    );
  const passwordFile = values['password-file'];
  const password = passwordFile
    ? (
        await readFile(passwordFile, 'utf8').catch(() => {
          throw new CliError(`cannot read ${passwordFile}`);
        })
      )
        .split('\n')[0]!
        .trim()
    : undefined;
  if (password !== undefined && password.length < 12)
    throw new CliError(`the password in ${passwordFile} is shorter than 12 characters`);
  const limitText = values['connection-limit'];
  const connectionLimit = limitText === undefined ? DEFAULT_CONNECTION_LIMIT : Number(limitText);
  if (!Number.isInteger(connectionLimit) || connectionLimit < -1 || connectionLimit > 10_000)
    throw new UsageError('--connection-limit: a whole number from 1 to 10000, or -1 for no limit');
  return { deployable, login, password, connectionLimit };
}

/** Makes the login role a member of the deployable's group role (creating it if a password was given). */
async function addLogin(admin: Sql, request: LoginRequest, json: boolean, io: Io): Promise<number> {
  const { deployable, login, password, connectionLimit } = request;
  const { created, notSet } = await ensureLogin(admin, deployable, login, password, {
    connectionLimit,
  }).catch((err: Error) => {
    throw new CliError(err.message);
  });
  const group = groupRole(deployable);
  if (json) {
    io.out(
      JSON.stringify({
        deployable,
        login,
        group,
        created,
        connection_limit: connectionLimit,
        not_set: notSet,
      }),
    );
    return 0;
  }
  io.out(
    `${created ? 'Created' : 'Using'} login role ${login}, a member of ${group} (at most ${connectionLimit === -1 ? 'unlimited' : connectionLimit} connections): ${deployable} connects as it.`,
  );
  if (notSet.length)
    io.out(
      `Not set, only a superuser may (see "What a login cannot change" in docs/database.md): ${notSet.join(', ')}.`,
    );
  return 0;
}

/** Creates every deployable's group role and grants it exactly what its deployable needs. */
async function grantGroupRoles(
  db: Database,
  specs: readonly RoleSpec[],
  json: boolean,
  io: Io,
): Promise<number> {
  const created = await asRoleAdmin(db, (admin) => ensureGroupRoles(admin, specs)).catch(
    (err: Error & { code?: string }) => {
      if (err.code === '42501')
        throw new CliError(
          'creating roles needs CREATEROLE: run `bulkhead db roles` with a superuser or a role with CREATEROLE as DATABASE_URL',
        );
      throw err;
    },
  );
  await applyPrivileges(db.sql, specs);
  if (json) {
    io.out(
      JSON.stringify({
        created,
        roles: specs.map((s) => ({ deployable: s.name, role: groupRole(s.name) })),
      }),
    );
    return 0;
  }
  for (const s of specs)
    io.out(
      `${groupRole(s.name).padEnd(24)} ${created.includes(groupRole(s.name)) ? 'created, ' : ''}granted what ${s.name} needs`,
    );
  io.out('Next: make each server’s login role a member: bulkhead db roles --login <deployable> <login-role>');
  return 0;
}

/**
 * Runs `fn` with a connection that may create roles: on the embedded default its superuser (the CLI
 * otherwise works as the schema owner, which may not), else the connection given.
 */
async function asRoleAdmin<T>(db: Database, fn: (admin: Sql) => Promise<T>): Promise<T> {
  if (!db.adminUrl) return fn(db.sql);
  const admin = createSql(db.adminUrl, { max: 1, applicationName: 'bulkhead-cli' });
  try {
    return await fn(admin);
  } finally {
    await admin.end({ timeout: 2 });
  }
}
