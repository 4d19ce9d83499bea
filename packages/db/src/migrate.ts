import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Sql } from './connect.ts';
import { ensureOwner, isSuperuser, schemaOwner } from './owner.ts';

/**
 * The folder of numbered SQL files: beside the package's source, or beside a
 * server's bundled `dist/main.js`, where the build copies them.
 */
export const migrationsDir =
  [new URL('../migrations/', import.meta.url), new URL('./migrations/', import.meta.url)]
    .map((u) => fileURLToPath(u))
    .find((dir) => existsSync(`${dir}/0001_tokens.sql`)) ??
  fileURLToPath(new URL('../migrations/', import.meta.url));

/** One migration file: `0003_audit.sql` → version 3. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Reads `NNNN_name.sql` files in version order; a duplicate version is a packaging error. */
export async function loadMigrations(dir = migrationsDir): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const version = Number(file.slice(0, 4));
    if (migrations.some((m) => m.version === version))
      throw new Error(`two migrations share version ${version}`);
    migrations.push({
      version,
      name: file.replace(/\.sql$/, ''),
      sql: await readFile(`${dir}/${file}`, 'utf8'),
    });
  }
  return migrations;
}

/** What {@link migrate} did. */
export interface MigrateResult {
  applied: string[];
  current: number;
}

const LOCK_KEY = 0x6275_6c6b; // "bulk": taken only while the schema does not exist yet

/**
 * Applies every migration not yet recorded, in version order, all in one
 * transaction (all or nothing), holding an exclusive lock on
 * `bulkhead_migrations` so that two processes migrating at once apply each
 * file exactly once. No deployable's role holds a privilege on that table,
 * so none can take the lock and stall a migration (an advisory lock anyone
 * may take; one is used only to create the table the first time); a
 * deployable reads what was applied through {@link missingMigrations} and
 * never calls this. When nothing is pending it changes nothing.
 * A pending version older than one already applied is refused: the files
 * would run in another order than on every other database.
 *
 * Migrations run as the schema's owner role, never as a superuser: connected
 * as a superuser, the database is first handed to a dedicated owner role
 * (`ensureOwner`, when the schema's owner is a superuser or there is no
 * schema yet), and the transaction then runs as that role (`SET LOCAL ROLE`).
 */
export async function migrate(
  sql: Sql,
  migrations?: Migration[],
  options: { lockWaitMs?: number } = {},
): Promise<MigrateResult> {
  const lockWaitMs = options.lockWaitMs ?? 60_000;
  const all = migrations ?? (await loadMigrations());
  const current = all.reduce((max, m) => Math.max(max, m.version), 0);
  const [table] = await sql<
    { exists: boolean }[]
  >`select to_regclass('public.bulkhead_migrations') is not null as exists`;
  if (table?.exists) {
    const done = new Set(
      (await sql<{ version: number }[]>`select version from public.bulkhead_migrations`).map(
        (r) => r.version,
      ),
    );
    if (all.every((m) => done.has(m.version))) return { applied: [], current };
  }
  if ((await isSuperuser(sql)) && (await schemaOwner(sql)).superuser) await ensureOwner(sql);
  return sql.begin(async (tx) => {
    const owner = await schemaOwner(tx);
    if (owner.superuser)
      throw new Error(
        `the schema's owner ${owner.role} is a superuser: connect as a superuser once so that it is handed to a dedicated owner role, or make the owner a role without SUPERUSER`,
      );
    const [me] = await tx<{ role: string }[]>`select current_user as role`;
    if (me!.role !== owner.role) await tx`set local role ${tx(owner.role)}`;
    // Another process migrating holds the lock for as long as its migrations take: wait, but not forever.
    await tx`select set_config('lock_timeout', ${String(lockWaitMs)}, true)`;
    try {
      const [exists] = await tx<
        { exists: boolean }[]
      >`select to_regclass('public.bulkhead_migrations') is not null as exists`;
      if (!exists!.exists) {
        await tx`select pg_catalog.pg_advisory_xact_lock(${LOCK_KEY})`;
        await tx`
          create table if not exists public.bulkhead_migrations (
            version integer primary key,
            name text not null,
            applied_at timestamptz not null default now()
          )`;
      }
      await tx`lock table public.bulkhead_migrations in exclusive mode`;
    } catch (err) {
      if ((err as { code?: string }).code === '55P03')
        throw new Error(
          `another process has been migrating this database for over ${lockWaitMs >= 1000 ? `${Math.round(lockWaitMs / 1000)} s` : `${lockWaitMs} ms`} (it holds the migration lock); wait for it, or find it in pg_stat_activity and stop it`,
        );
      throw err;
    }
    await tx`select set_config('lock_timeout', '0', true)`;
    const done = new Set(
      (await tx<{ version: number }[]>`select version from public.bulkhead_migrations`).map((r) => r.version),
    );
    const newest = Math.max(0, ...done);
    const late = all.filter((m) => !done.has(m.version) && m.version < newest);
    if (late.length) {
      throw new Error(
        `migration ${late.map((m) => m.name).join(', ')} is older than ${newest}, already applied: this database took another path; restore it or apply by hand`,
      );
    }
    const applied: string[] = [];
    for (const m of all) {
      if (done.has(m.version)) continue;
      await tx.savepoint(async (sp) => {
        await sp.unsafe(m.sql);
        await sp`insert into public.bulkhead_migrations (version, name) values (${m.version}, ${m.name})`;
      });
      applied.push(m.name);
    }
    return { applied, current };
  });
}

/** The migration that adds `bulkhead_schema_versions()`, through which any login reads what was applied. */
const SCHEMA_VERSIONS_SINCE = 54;

/**
 * Whether the connected login may migrate: a superuser, or a member of the schema's owner role (the
 * role {@link migrate} runs as). Read from the catalog alone, so any login may ask.
 */
export async function mayMigrate(sql: Sql): Promise<boolean> {
  if (await isSuperuser(sql)) return true;
  const owner = await schemaOwner(sql);
  const [row] = await sql<
    { member: boolean }[]
  >`select pg_has_role(current_user, ${owner.role}, 'MEMBER') as member`;
  return Boolean(row?.member);
}

/**
 * The migrations of `migrations` (default: the files) that this database has not applied, read with
 * no privilege on `bulkhead_migrations` and no DDL: through `bulkhead_schema_versions()` (0054), which
 * every login may call. A database with no schema lacks them all; one from before 0054 lacks 0054 and
 * every later one (and perhaps earlier ones, which its logins cannot see). Versions applied that the
 * files do not know (a newer release migrated the database) are no lack.
 */
export async function missingMigrations(sql: Sql, migrations?: Migration[]): Promise<Migration[]> {
  const all = migrations ?? (await loadMigrations());
  const [row] = await sql<{ schema: boolean; versions: boolean }[]>`
    select to_regclass('public.bulkhead_migrations') is not null as schema,
      to_regprocedure('public.bulkhead_schema_versions()') is not null as versions`;
  if (!row!.schema) return all;
  if (!row!.versions) return all.filter((m) => m.version >= SCHEMA_VERSIONS_SINCE);
  const [applied] = await sql<{ versions: number[] }[]>`select public.bulkhead_schema_versions() as versions`;
  const done = new Set(applied!.versions);
  return all.filter((m) => !done.has(m.version));
}
