import { mayMigrate, migrate, missingMigrations, type Sql } from '@bulkhead/db';
import { StartupError } from './stdio.ts';

/** How a deployable readies the schema at start: its `BULKHEAD_MIGRATE` and `BULKHEAD_ALLOW_OWNER_ROLE`. */
export interface ReadySchemaOptions {
  deployable: string;
  migrate: boolean;
  allowOwner: boolean;
}

/**
 * Makes sure the schema is as new as this code before a deployable serves, and never migrates under
 * the deployable's own role: only a login allowed to run as the owner (`BULKHEAD_ALLOW_OWNER_ROLE`)
 * that may migrate, with `BULKHEAD_MIGRATE` on, applies what is pending. Any other login reads what was
 * applied (no DDL, no privilege on `bulkhead_migrations`) and, when the schema is behind, stops the start
 * with one sentence naming the command that migrates as the owner. Returns the migrations applied.
 */
export async function readySchema(sql: Sql, options: ReadySchemaOptions): Promise<string[]> {
  if (options.migrate && options.allowOwner && (await mayMigrate(sql))) return (await migrate(sql)).applied;
  const missing = await missingMigrations(sql);
  if (missing.length)
    throw new StartupError(
      schemaBehind(
        options.deployable,
        missing.map((m) => m.name),
      ),
    );
  return [];
}

/** The sentence of a start refused on a schema behind the code. */
export function schemaBehind(deployable: string, missing: readonly string[]): string {
  const named =
    missing.length === 1
      ? `migration ${missing[0]} is`
      : `migrations ${missing[0]} and ${missing.length - 1} more are`;
  return (
    `the database's schema is behind this code (${named} not applied), and ${deployable} never migrates under its own role: ` +
    `apply ${missing.length === 1 ? 'it' : 'them'} as the schema's owner with \`DATABASE_URL=<the owner's URL> pnpm bulkhead db migrate\`, then start again`
  );
}
