import { randomBytes } from 'node:crypto';
import { createSql, ensureLogin, type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { horizon, settled } from './horizon.ts';
import { sealLog } from './seal.ts';
import { createAuditWriter } from './writer.ts';

/**
 * Issue 42, item 8: the seal horizon waits only for transactions that hold an event number, and the
 * sealer refuses a login that reconfigured itself. Tried under the deployables' own logins.
 */
const KEY = 'h'.repeat(43);
let db: TestDatabase;
let admin: Sql;
let sealer: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = (await db.as('admin')).sql;
  sealer = (await db.as('sealer', { kind: 'sealer' })).sql;
}, 60_000);
afterAll(async () => {
  await db?.drop();
});

/** A transaction of its own on `sql`, kept open until the returned function ends it (rolled back). */
async function held(sql: Sql, statements: string[]): Promise<{ xid: string; end: () => Promise<void> }> {
  const conn = await sql.reserve();
  await conn`begin`;
  for (const s of statements) await conn.unsafe(s);
  const [row] = await conn<{ xid: string }[]>`select pg_current_xact_id()::text as xid`;
  return {
    xid: row!.xid,
    end: async () => {
      await conn`rollback`;
      conn.release();
    },
  };
}

/** A transaction that takes an id and ends, so that the snapshots after it list every older one running. */
const ended = () => db.sql`select pg_current_xact_id()`;

it('a login that only locks audit_events with a transaction id is not waited for; a writer holding a number is', async () => {
  const locker = await held(admin, ['lock table audit_events in row exclusive mode']);
  try {
    // It holds what every writer held, the lock the horizon used to wait on …
    const [lock] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from pg_locks
      where relation = 'audit_events'::regclass and mode = 'RowExclusiveLock' and granted`;
    expect(lock!.n).toBe(1);
    // … and no seal round waits for it, when transactions after it have ended too.
    await ended();
    const h = await horizon(sealer);
    expect(h.running).toEqual([]);
    expect(await settled(sealer, h)).toBe(true);

    const writer = await held(admin, [
      `insert into audit_events (server, method, outcome, duration_ms, request_id)
        values ('admin', 'tools/call', 'ok', 1, 'held')`,
    ]);
    try {
      // Its id is the newest: no transaction after it has ended (the snapshot's xmax is its id).
      const during = await horizon(sealer);
      expect(during.running).toEqual([writer.xid]);
      expect(await settled(sealer, during)).toBe(false);
      await ended();
      expect((await horizon(sealer)).running).toEqual([writer.xid]);
      expect(await settled(sealer, during)).toBe(false);
    } finally {
      await writer.end();
    }
    expect((await horizon(sealer)).running).toEqual([]);
  } finally {
    await locker.end();
  }
});

it('no login can take the writers’ lock without a number: not by LOCK TABLE, nor by a refused statement', async () => {
  for (const statement of [
    'lock table audit_events_writers in row exclusive mode',
    'select * from audit_events_writers',
    'insert into audit_events_writers default values',
  ]) {
    const conn = await admin.reserve();
    try {
      await conn`begin`;
      await conn`select pg_current_xact_id()`;
      await conn`savepoint s`;
      const refused = await conn.unsafe(statement).then(
        () => 'ok',
        (err: Error) => err.message,
      );
      expect([statement, refused]).toEqual([statement, 'permission denied for table audit_events_writers']);
      await conn`rollback to savepoint s`;
      const [mine] = await conn<{ n: number }[]>`
        select count(*)::int as n from pg_locks
        where pid = pg_backend_pid() and relation = 'audit_events_writers'::regclass`;
      expect([statement, mine!.n]).toEqual([statement, 0]);
      expect([statement, (await horizon(sealer)).running]).toEqual([statement, []]);
    } finally {
      await conn`rollback`;
      conn.release();
    }
  }
});

it('the sealer refuses to seal under a login that stored a setting for itself', async () => {
  const login = `bh_sealer_${randomBytes(4).toString('hex')}`;
  await ensureLogin(db.admin, 'sealer', login, 'bulkhead-test');
  const url = new URL(db.url);
  url.username = login;
  url.password = 'bulkhead-test';
  const sql = createSql(url.toString(), { max: 2 });
  try {
    expect((await sealLog(sql, KEY, { waitMs: 0 })).elected).toBe(true);
    await sql`alter role current_user set bytea_output = 'escape'`;
    await expect(sealLog(sql, KEY, { waitMs: 0, heartbeat: true })).rejects.toThrow(
      'login role has reconfigured itself (ALTER ROLE … SET bytea_output=escape): the sealer refuses to seal under it until an administrator runs ALTER ROLE … RESET ALL and `bulkhead db roles --login` again',
    );
  } finally {
    await sql.end({ timeout: 2 });
    await db.admin.unsafe(`drop role ${login}`);
  }
});

it('the audit writer’s check fails, with the sentence, under a login that stored a setting for itself', async () => {
  const login = `bh_server_${randomBytes(4).toString('hex')}`;
  await ensureLogin(db.admin, 'customer', login, 'bulkhead-test');
  const url = new URL(db.url);
  url.username = login;
  url.password = 'bulkhead-test';
  const sql = createSql(url.toString(), { max: 2 });
  try {
    const audit = createAuditWriter(sql);
    await audit.check();
    await sql`alter role current_user set statement_timeout = 0`;
    await expect(audit.check()).rejects.toThrow(
      'the audit log refuses this login: it has reconfigured itself (ALTER ROLE … SET statement_timeout=0); an administrator must run ALTER ROLE … RESET ALL and `bulkhead db roles --login` again',
    );
  } finally {
    await sql.end({ timeout: 2 });
    await db.admin.unsafe(`drop role ${login}`);
  }
});
