import { existsSync, readFileSync } from 'node:fs';
import {
  connectedAsOwner,
  isConnectionError,
  openDatabase,
  sessionHazards,
  type Database,
  type RoleSpec,
  type Sql,
} from '@bulkhead/db';
import type { Logger } from '../pipeline/observability/logger.ts';
import { checkPooler } from './pooler.ts';
import { readySchema } from './schema.ts';
import { StartupError } from './stdio.ts';

// The start of every deployable, the MCP servers (`runServer`) and the console alike: open the database
// under its own role, then ready it (pooler, schema, role) or refuse to start with one sentence.
// A running process reads nothing of the other deployables: what it needs of itself (its name, kind,
// gated tools, grants) it carries; the other deployables' roles are set up by `pnpm start` and `db roles`.

/** The variables of a deployable's environment that its start reads. */
export interface StartUpEnv {
  DATABASE_URL?: string | undefined;
  BULKHEAD_DATA_DIR: string;
  BULKHEAD_MIGRATE: boolean;
  BULKHEAD_ALLOW_OWNER_ROLE: boolean;
}

/**
 * The deployable's own grants: the `grants.sql` beside its bundle (`dist/grants.sql`, where
 * build-server.mjs puts it) or in its package folder (run from source, `src/main.ts`); null when it has
 * none. `entry` is the `import.meta.url` of its `main.ts`.
 */
export function ownGrants(entry: string | URL): string | null {
  for (const candidate of ['./grants.sql', '../grants.sql']) {
    const file = new URL(candidate, entry);
    if (existsSync(file)) return readFileSync(file, 'utf8');
  }
  return null;
}

/**
 * Opens the deployable's database: `DATABASE_URL` as given, or the embedded default, where it connects
 * under its own login role, created on the way with the grants of its own role spec (`self`).
 */
export function openOwnDatabase(
  self: RoleSpec,
  env: StartUpEnv,
  options: { logger: Logger; max?: number },
): Promise<Database> {
  return openDatabase({
    ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {}),
    dataDir: env.BULKHEAD_DATA_DIR,
    applicationName: `bulkhead-${self.name}`,
    ...(options.max ? { max: options.max } : {}),
    log: (line) => options.logger.info(line),
    deployable: { name: self.name, roles: [self] },
  });
}

/**
 * Readies the database for serving, or fails the start: checks for a pooler (on `reads` too, when the
 * deployable has a read pool), checks that the schema is current (migrating it only as an allowed owner,
 * never under the deployable's own role), and checks the role. `quiet` (stdio, where the log goes to a
 * desktop client's stderr) logs the role at debug only.
 */
export async function prepareDatabase(
  deployable: string,
  env: StartUpEnv,
  {
    sql,
    reads,
    logger,
    quiet = false,
  }: { sql: Sql; reads?: Sql | undefined; logger: Logger; quiet?: boolean },
): Promise<void> {
  // First: behind a pooler that loses sessions, even the migration's lock would not hold.
  await checkPooler(sql, reads);
  const applied = await readySchema(sql, {
    deployable,
    migrate: env.BULKHEAD_MIGRATE,
    allowOwner: env.BULKHEAD_ALLOW_OWNER_ROLE,
  });
  if (applied.length) logger.info({ applied }, 'migrations applied');
  const role = await checkRole(sql, deployable, env.BULKHEAD_ALLOW_OWNER_ROLE);
  if (quiet) logger.debug(role);
  else logger.info(role);
}

/**
 * Refuses to serve under a role that is not this deployable's own: the schema
 * owner or a superuser (unless allowed, for a one-off) could do anything the
 * database otherwise refuses, and another deployable's role would run this
 * server with the wrong rights.
 */
export async function checkRole(sql: Sql, deployable: string, allowOwner: boolean): Promise<string> {
  const who = await connectedAsOwner(sql);
  if (who.owner) {
    if (allowOwner)
      return `running as ${who.role}, the schema owner or a superuser (BULKHEAD_ALLOW_OWNER_ROLE=true)`;
    throw new StartupError(
      `connected to PostgreSQL as "${who.role}", which owns the schema or is a superuser; run ${deployable} under its own role ` +
        `(\`pnpm bulkhead db roles --login ${deployable} <login-role>\`), or set BULKHEAD_ALLOW_OWNER_ROLE=true to allow it (not for production)`,
    );
  }
  if (who.deployable !== deployable)
    throw new StartupError(
      `connected to PostgreSQL as "${who.role}", which ${who.deployable ? `is the role of ${who.deployable}` : 'belongs to no deployable'}, not of ${deployable}: ` +
        `make it a member of its group role with \`pnpm bulkhead db roles --login ${deployable} ${who.role}\``,
    );
  // What a session of this role could change about its own sessions is what the database's checks rest on.
  const hazards = await sessionHazards(sql);
  if (hazards.length)
    throw new StartupError(
      `connected to PostgreSQL as "${who.role}", which can change what the database's checks assume: ${hazards.join('; ')}`,
    );
  return `running as ${who.role} (${deployable})`;
}

/**
 * A start-up step that could not connect, as one sentence: which role, what PostgreSQL said, and, when
 * no connection was left (53300: the login role's `CONNECTION LIMIT` or the server's `max_connections`
 * used up), what to do; `holds` is how many connections one such process holds at most. Any other error
 * is returned as it is.
 */
export function connectFailure(err: unknown, url: string, deployable: string, holds: number): unknown {
  if (err instanceof StartupError || !isConnectionError(err)) return err;
  let role = '';
  try {
    role = decodeURIComponent(new URL(url).username);
  } catch {
    // not a URL: say nothing of the role
  }
  const message = err instanceof Error ? err.message : String(err);
  const full = (err as { code?: unknown }).code === '53300';
  return new StartupError(
    `could not connect to PostgreSQL${role ? ` as "${role}"` : ''}: ${message}` +
      (full
        ? ` (the login role's CONNECTION LIMIT or PostgreSQL's max_connections is used up; one ${deployable} process holds up to ${holds}). ` +
          `Raise the login's limit (\`bulkhead db roles --login ${deployable} ${role || '<login-role>'} --connection-limit N\`) ` +
          "or PostgreSQL's max_connections, or run fewer replicas"
        : '; check DATABASE_URL and that PostgreSQL is up'),
  );
}
