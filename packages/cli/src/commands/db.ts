import { readFile } from 'node:fs/promises';
import { createSql, ensureOwner, migrate, OWNER_ROLE } from '@bulkhead/db';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { CliError, UsageError } from '../io.ts';
import { refreshPrivileges } from '../deployable-roles.ts';
import { rolesCommand } from './roles.ts';
import { seedCommand } from './seed.ts';

const migrateCommand: Command = {
  name: 'migrate',
  summary: 'apply pending migrations',
  help: `Usage: bulkhead db migrate [--json]

Applies the numbered SQL migrations not yet recorded, in order, in one
transaction, under an advisory lock (safe to run twice, or from two processes).
Once the group roles exist (\`db roles\`), their grants are applied again so
that new tables get them too.`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, { json: { type: 'boolean', default: false } });
    return withDatabase(
      env,
      io,
      async ({ sql, embedded }) => {
        const result = await migrate(sql);
        // New tables need the group roles' grants too, once the roles exist.
        if (result.applied.length) await refreshPrivileges(sql);
        if (values.json) io.out(JSON.stringify(result));
        else if (result.applied.length)
          io.out(`Applied ${result.applied.join(', ')}; schema at version ${result.current}.`);
        else
          io.out(
            `Nothing to apply; schema at version ${result.current}${embedded ? ' (embedded database)' : ''}.`,
          );
        return 0;
      },
      { migrate: false },
    );
  },
};

const ownerCommand: Command = {
  name: 'owner',
  summary: 'hand the database to its owner role, which is no superuser',
  help: `Usage: bulkhead db owner [--role <name>] [--password-file <file>] [--json]

Makes a dedicated role (default ${OWNER_ROLE}: no SUPERUSER, CREATEROLE,
CREATEDB, REPLICATION or BYPASSRLS) the owner of the database, of its schema
and of every object in it, so that the database's own functions never run
with a superuser's rights. Also takes from PUBLIC what no server needs and a
session could abuse: TEMP on the database, CREATE on the schema and, run as a
superuser, creating large objects and taking advisory locks.

Run it with a superuser, or with a managed database's administrator (a role
with CREATEROLE and CREATEDB that owns the database), as DATABASE_URL; then
migrate and run the CLI as the owner role. \`db migrate\` run by a superuser
does this by itself when the schema's owner is a superuser. Idempotent.

Options:
  --role <name>            the owner role (default ${OWNER_ROLE})
  --password-file <file>   make it a login role with the password in the file
                           (first line); without it a new role is NOLOGIN
  --json                   print { role, created, moved, revoked }`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(argv, {
      role: { type: 'string', default: OWNER_ROLE },
      'password-file': { type: 'string' },
      json: { type: 'boolean', default: false },
    });
    if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
    const role = values.role!;
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(role))
      throw new UsageError('--role: a role name (lower case, digits, _)');
    const file = values['password-file'];
    const password =
      file === undefined
        ? undefined
        : (
            await readFile(file, 'utf8').catch(() => {
              throw new CliError(`cannot read ${file}`);
            })
          )
            .split('\n')[0]!
            .trim();
    if (password !== undefined && password.length < 12)
      throw new CliError(`the password in ${file} is shorter than 12 characters`);
    return withDatabase(
      env,
      io,
      async (db) => {
        const admin = db.adminUrl
          ? createSql(db.adminUrl, { max: 1, applicationName: 'bulkhead-cli' })
          : db.sql;
        try {
          const report = await ensureOwner(admin, {
            role,
            ...(password !== undefined ? { password } : {}),
          }).catch((err: Error) => {
            throw new CliError(err.message);
          });
          if (values.json) io.out(JSON.stringify(report));
          else {
            io.out(
              `${report.created ? 'Created' : 'Using'} ${role}: it owns the database${report.moved.length ? ` and now ${report.moved.length} objects it did not own before` : ''}.`,
            );
            io.out(
              report.revoked.length
                ? `PUBLIC may no longer create temporary objects, objects in the schema or large objects, nor take advisory locks.`
                : `PUBLIC may no longer create temporary objects or objects in the schema (not a superuser: large objects and advisory locks stay open to PUBLIC).`,
            );
          }
          return 0;
        } finally {
          if (admin !== db.sql) await admin.end({ timeout: 2 });
        }
      },
      { migrate: false },
    );
  },
};

/** `db` subcommands; `seed` joins them in its own file. */
export const dbSubcommands: Command[] = [migrateCommand, ownerCommand, rolesCommand, seedCommand];
export const dbCommand = () => group('db', 'Database schema and data.', dbSubcommands);
