import { loadMigrations, migrate, type Migration, type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readySchema, schemaBehind } from './schema.ts';

let db: TestDatabase;
let login: Sql;
let newest: string;
let newestVersion: number;

beforeAll(async () => {
  db = await createTestDatabase();
  login = (await db.as('dev-knowledge')).sql;
  const last = (await loadMigrations()).at(-1)!;
  newest = last.name;
  newestVersion = last.version;
});
afterAll(async () => {
  await db.drop();
});

/** The versions recorded, as the owner sees them. */
async function recorded(owner: Sql): Promise<number[]> {
  const rows = await owner<{ version: number }[]>`select version from bulkhead_migrations order by version`;
  return rows.map((r) => r.version);
}

/** A database of its own with only `migrations` applied, as one that code newer than it meets. */
async function databaseAt(migrations: Migration[]): Promise<TestDatabase> {
  const at = await createTestDatabase({ migrate: false, roles: [] });
  await migrate(at.sql, migrations);
  return at;
}

/** A server's start under its own role, with BULKHEAD_MIGRATE on (the default). */
const asLogin = { deployable: 'dev-knowledge', migrate: true, allowOwner: false };

it('on a current schema, a server under its own role starts with migrations on, migrating nothing', async () => {
  expect(await readySchema(login, asLogin)).toEqual([]);
});

it('behind, a server under its own role stops with one sentence naming the migrate command, and changes nothing', async () => {
  // A database that really is one behind: every migration applied but the newest (the newest need not
  // be one that may be applied twice).
  const all = await loadMigrations();
  const behind = await databaseAt(all.slice(0, -1));
  try {
    const own = (await behind.as('dev-knowledge', { kind: 'mcp' })).sql;
    const before = await recorded(behind.sql);
    const refused = await readySchema(own, asLogin).catch((err: Error) => err);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toBe(
      `the database's schema is behind this code (migration ${newest} is not applied), and dev-knowledge never migrates under its own role: ` +
        "apply it as the schema's owner with `DATABASE_URL=<the owner's URL> pnpm bulkhead db migrate`, then start again",
    );
    expect((refused as Error).message).toBe(schemaBehind('dev-knowledge', [newest]));
    // Nothing was applied on the way.
    expect(await recorded(behind.sql)).toEqual(before);
    expect(before).not.toContain(newestVersion);
    // BULKHEAD_MIGRATE=false refuses the same way: a server never serves on a schema older than its code.
    await expect(readySchema(own, { ...asLogin, migrate: false })).rejects.toThrow(
      `schema is behind this code (migration ${newest} is not applied)`,
    );
    // The owner, allowed to serve as such, migrates; not allowed, or told not to, it is refused the same way.
    await expect(readySchema(behind.sql, { ...asLogin, allowOwner: false })).rejects.toThrow(
      /behind this code/,
    );
    await expect(readySchema(behind.sql, { ...asLogin, allowOwner: true, migrate: false })).rejects.toThrow(
      /behind this code/,
    );
    expect(await readySchema(behind.sql, { ...asLogin, allowOwner: true })).toEqual([newest]);
    expect(await recorded(behind.sql)).toEqual([...before, newestVersion]);
    expect(await readySchema(own, asLogin)).toEqual([]);
  } finally {
    await behind.drop();
  }
});

it('on a database from before 0054, which its logins cannot read the versions of, it counts 0054 and every later one as missing', async () => {
  const all = await loadMigrations();
  const old = await databaseAt(all.filter((m) => m.version < 54));
  try {
    const own = (await old.as('dev-knowledge', { kind: 'mcp' })).sql;
    const missing = all.filter((m) => m.version >= 54).map((m) => m.name);
    expect(missing[0]).toBe('0054_schema_versions');
    expect(missing.at(-1)).toBe(newest);
    await expect(readySchema(own, asLogin)).rejects.toThrow(schemaBehind('dev-knowledge', missing));
    // The login still cannot read the table itself: the sentence came from what it may see.
    await expect(own`select version from bulkhead_migrations`).rejects.toThrow(/permission denied/);
    expect(await readySchema(old.sql, { ...asLogin, allowOwner: true })).toEqual(missing);
    expect(await readySchema(own, asLogin)).toEqual([]);
  } finally {
    await old.drop();
  }
});
