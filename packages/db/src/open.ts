import { createSql, type Sql } from './connect.ts';
import { ensureEmbedded } from './embedded.ts';

/** Options for {@link openDatabase}. */
export interface OpenDatabaseOptions {
  /** `DATABASE_URL`; when absent the embedded default in `dataDir` is used (started if needed). */
  databaseUrl?: string;
  dataDir: string;
  applicationName?: string;
  max?: number;
  log?: (line: string) => void;
}

/** An open pool plus how to close it (and the embedded server, when this process started it). */
export interface Database {
  sql: Sql;
  url: string;
  embedded: boolean;
  /** Closes the pool; resolves to true when this also stopped the embedded server (it was the last user). */
  close(): Promise<boolean>;
}

/** Connects to `DATABASE_URL`, or to the embedded default, starting it when nothing runs yet. */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const embedded = options.databaseUrl
    ? undefined
    : await ensureEmbedded({ dataDir: options.dataDir, ...(options.log ? { log: options.log } : {}) });
  const url = options.databaseUrl ?? embedded!.url;
  const sql = createSql(url, {
    max: options.max ?? 10,
    applicationName: options.applicationName ?? 'bulkhead',
  });
  return {
    sql,
    url,
    embedded: Boolean(embedded),
    close: async () => {
      await sql.end({ timeout: 5 });
      return (await embedded?.stop()) ?? false;
    },
  };
}
