import { loadMigrations, type Sql } from '@bulkhead/db';
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
async function recorded(): Promise<number[]> {
  const rows = await db.sql<{ version: number }[]>`select version from bulkhead_migrations order by version`;
  return rows.map((r) => r.version);
}

/** A server's start under its own role, with BULKHEAD_MIGRATE on (the default). */
const asLogin = { deployable: 'dev-knowledge', migrate: true, allowOwner: false };

it('on a current schema, a server under its own role starts with migrations on, migrating nothing', async () => {
  expect(await readySchema(login, asLogin)).toEqual([]);
});

it('behind, a server under its own role stops with one sentence naming the migrate command, and changes nothing', async () => {
  const before = await recorded();
  // The newest migration unrecorded: the schema is one behind. The owner applies it again below, which
  // holds while the newest may be applied twice (0055 is a `create or replace`); one that may not must
  // change this step.
  await db.sql`delete from bulkhead_migrations where version = ${newestVersion}`;
  try {
    const refused = await readySchema(login, asLogin).catch((err: Error) => err);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toBe(
      `the database's schema is behind this code (migration ${newest} is not applied), and dev-knowledge never migrates under its own role: ` +
        "apply it as the schema's owner with `DATABASE_URL=<the owner's URL> pnpm bulkhead db migrate`, then start again",
    );
    expect((refused as Error).message).toBe(schemaBehind('dev-knowledge', [newest]));
    // Nothing was applied on the way.
    expect(await recorded()).toEqual(before.filter((v) => v !== newestVersion));
    // BULKHEAD_MIGRATE=false refuses the same way: a server never serves on a schema older than its code.
    await expect(readySchema(login, { ...asLogin, migrate: false })).rejects.toThrow(
      `schema is behind this code (migration ${newest} is not applied)`,
    );
    // The owner, allowed to serve as such, migrates; not allowed, or told not to, it is refused the same way.
    await expect(readySchema(db.sql, { ...asLogin, allowOwner: false })).rejects.toThrow(/behind this code/);
    await expect(readySchema(db.sql, { ...asLogin, allowOwner: true, migrate: false })).rejects.toThrow(
      /behind this code/,
    );
    expect(await readySchema(db.sql, { ...asLogin, allowOwner: true })).toEqual([newest]);
    expect(await recorded()).toEqual(before);
  } finally {
    await db.sql`insert into bulkhead_migrations (version, name) values (${newestVersion}, ${newest}) on conflict do nothing`;
  }
});

it('on a database from before 0054, which its logins cannot read the versions of, it counts 0054 and every later one as missing', async () => {
  await db.sql`drop function bulkhead_schema_versions()`;
  await db.sql`delete from bulkhead_migrations where version >= 54`;
  const missing = (await loadMigrations()).filter((m) => m.version >= 54).map((m) => m.name);
  expect(missing[0]).toBe('0054_schema_versions');
  expect(missing.at(-1)).toBe(newest);
  await expect(readySchema(login, asLogin)).rejects.toThrow(schemaBehind('dev-knowledge', missing));
  // The login still cannot read the table itself: the sentence came from what it may see.
  await expect(login`select version from bulkhead_migrations`).rejects.toThrow(/permission denied/);
  expect(await readySchema(db.sql, { ...asLogin, allowOwner: true })).toEqual(missing);
  expect(await readySchema(login, asLogin)).toEqual([]);
});
