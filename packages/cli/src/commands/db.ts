import { migrate } from '@bulkhead/db';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
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

/** `db` subcommands; `seed` joins them in its own file. */
export const dbSubcommands: Command[] = [migrateCommand, rolesCommand, seedCommand];
export const dbCommand = () => group('db', 'Database schema and data.', dbSubcommands);
