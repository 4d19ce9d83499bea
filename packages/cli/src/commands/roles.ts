import { readFile } from 'node:fs/promises';
import { applyPrivileges, ensureGroupRoles, ensureLogin, groupRole } from '@bulkhead/db';
import { deployableRoles } from '../deployable-roles.ts';
import { parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { CliError, UsageError } from '../io.ts';
import { describePrivileges, privilegesTable } from '../privileges.ts';

export const rolesCommand: Command = {
  name: 'roles',
  summary: 'create each deployable’s group role with exactly its rights; add login roles',
  help: `Usage: bulkhead db roles [--json]
       bulkhead db roles --login <deployable> <login-role> [--password-file <file>]
       bulkhead db roles --table

Creates the NOLOGIN group roles bulkhead_admin, bulkhead_customer,
bulkhead_dev_knowledge, bulkhead_console (one per folder under servers/) and
bulkhead_sealer (the audit sealer), and gives each exactly what its deployable
needs in this database: explicit grants (no "all tables"), column grants where a
table is shared, row-level policies where rows are (customer rows are fenced by
the customer the token names). Every earlier grant of these roles is revoked
first. Idempotent; run it as the schema owner with CREATEROLE, after
\`db migrate\` (which re-applies the grants by itself once the roles exist).

Options:
  --login <deployable> <login-role>
                    make an existing login role a member of that deployable's
                    group role (servers then connect as the login role)
  --password-file <file>
                    with --login: create the login role if it is missing, and
                    set its password from the file (first line)
  --table           print the roles table of the README, read from the
                    database's own catalog
  --json            print what was created and granted`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(
      argv,
      {
        login: { type: 'string' },
        'password-file': { type: 'string' },
        table: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
      true,
    );
    const specs = deployableRoles();
    if (values.login !== undefined) {
      const deployable = values.login;
      const login = positionals[0];
      if (!specs.some((s) => s.name === deployable))
        throw new UsageError(
          `--login: unknown deployable "${deployable}"; one of: ${specs.map((s) => s.name).join(', ')}`,
        );
      if (!login || positionals.length > 1 || !/^[a-z_][a-z0-9_]{0,62}$/.test(login))
        throw new UsageError(
          '--login <deployable> <login-role>: give one login role name (lower case, digits, _)',
        );
      const password = values['password-file']
        ? (
            await readFile(values['password-file'], 'utf8').catch(() => {
              throw new CliError(`cannot read ${values['password-file']}`);
            })
          )
            .split('\n')[0]!
            .trim()
        : undefined;
      if (password !== undefined && password.length < 12)
        throw new CliError(`the password in ${values['password-file']} is shorter than 12 characters`);
      return withDatabase(env, io, async ({ sql }) => {
        const { created } = await ensureLogin(sql, deployable, login, password).catch((err: Error) => {
          throw new CliError(err.message);
        });
        const result = { deployable, login, group: groupRole(deployable), created };
        if (values.json) io.out(JSON.stringify(result));
        else
          io.out(
            `${created ? 'Created' : 'Using'} login role ${login}, a member of ${groupRole(deployable)}: ${deployable} connects as it.`,
          );
        return 0;
      });
    }
    if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
    return withDatabase(env, io, async ({ sql }) => {
      if (values.table) {
        io.out(
          privilegesTable(
            await describePrivileges(
              sql,
              specs.map((s) => groupRole(s.name)),
            ),
          ),
        );
        return 0;
      }
      const created = await ensureGroupRoles(sql, specs).catch((err: Error & { code?: string }) => {
        if (err.code === '42501')
          throw new CliError(
            'creating roles needs CREATEROLE: run `bulkhead db roles` with the schema owner (or a superuser) as DATABASE_URL',
          );
        throw err;
      });
      await applyPrivileges(sql, specs);
      if (values.json)
        io.out(
          JSON.stringify({
            created,
            roles: specs.map((s) => ({ deployable: s.name, role: groupRole(s.name) })),
          }),
        );
      else {
        for (const s of specs)
          io.out(
            `${groupRole(s.name).padEnd(24)} ${created.includes(groupRole(s.name)) ? 'created, ' : ''}granted what ${s.name} needs`,
          );
        io.out(
          'Next: make each server’s login role a member: bulkhead db roles --login <deployable> <login-role>',
        );
      }
      return 0;
    });
  },
};
