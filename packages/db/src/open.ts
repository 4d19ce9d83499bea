import { createSql, type Sql } from './connect.ts';
import type { EmbeddedDatabase } from './embedded.ts';
import type { RoleSpec } from './roles.ts';

/** Options for {@link openDatabase}. */
export interface OpenDatabaseOptions {
  /** `DATABASE_URL`; when absent the embedded default in `dataDir` is used (started if needed). */
  databaseUrl?: string;
  dataDir: string;
  applicationName?: string;
  max?: number;
  log?: (line: string) => void;
  /**
   * On the embedded default: connect as this deployable's own login role (created, with the schema
   * migrated and the grants of `roles` applied, by the owner first). Ignored with `databaseUrl`.
   */
  deployable?: { name: string; roles: readonly RoleSpec[] };
  /**
   * On the embedded default: keep the cluster running while this process uses it, restarted with
   * back-off when it dies; each stop, restart and failed try is told here in one sentence.
   */
  supervise?: (line: string) => void;
}

/** An open pool plus how to close it (and the embedded server, when this process started it). */
export interface Database {
  sql: Sql;
  url: string;
  embedded: boolean;
  /** On the embedded default: the superuser's URL, for creating roles (nothing else). */
  adminUrl?: string;
  /** Closes the pool; resolves to true when this also stopped the embedded server (it was the last user). */
  close(): Promise<boolean>;
}

/**
 * Connects to `DATABASE_URL`, or to the embedded default, starting it when nothing runs yet. The
 * embedded modules are loaded only then: with `DATABASE_URL` (every deployment) they never are.
 */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const embedded = options.databaseUrl ? undefined : await openEmbedded(options);
  const url = options.databaseUrl ?? embedded!.url;
  const sql = createSql(url, {
    max: options.max ?? 10,
    applicationName: options.applicationName ?? 'bulkhead',
  });
  return {
    sql,
    url,
    embedded: Boolean(embedded),
    ...(embedded ? { adminUrl: embedded.server.adminUrl } : {}),
    close: async () => {
      await sql.end({ timeout: 5 });
      return (await embedded?.server.stop()) ?? false;
    },
  };
}

/** The embedded default, started if needed, and the URL to connect with (the deployable's own login, if given). */
async function openEmbedded(
  options: OpenDatabaseOptions,
): Promise<{ server: EmbeddedDatabase; url: string }> {
  const { ensureEmbedded } = await import('./embedded.ts');
  let server = await ensureEmbedded({
    dataDir: options.dataDir,
    ...(options.log ? { log: options.log } : {}),
  });
  if (options.supervise) {
    const { superviseEmbedded } = await import('./embedded-supervisor.ts');
    server = await superviseEmbedded(server, { dataDir: options.dataDir, report: options.supervise });
  }
  if (!options.deployable) return { server, url: server.url };
  const { prepareEmbeddedRoles } = await import('./embedded-roles.ts');
  const { name, roles } = options.deployable;
  const urls = await prepareEmbeddedRoles(server.adminUrl, options.dataDir, roles, [name]);
  return { server, url: urls[name]! };
}
