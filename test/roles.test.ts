import { createAuditWriter } from '@bulkhead/audit';
import { createSql, createTestDatabase, migrate, type TestDatabase } from '@bulkhead/db';
import { afterAll, beforeAll, expect, it } from 'vitest';

let db: TestDatabase;
const role = `bh_server_${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql.unsafe(`create role ${role} login password 'pw-${role}'`);
  await db.sql`select bulkhead_grant_server_role(${role})`;
});
afterAll(async () => {
  await db.sql.unsafe(`drop owned by ${role}`);
  await db.sql.unsafe(`drop role ${role}`);
  await db.drop();
});

it('a server role may append to the audit log but not change, delete or truncate it, nor issue tokens', async () => {
  const url = new URL(db.url);
  url.username = role;
  url.password = `pw-${role}`;
  const sql = createSql(url.toString(), { max: 2 });
  try {
    const audit = createAuditWriter(sql);
    await audit.check();
    const event = await audit.append({
      server: 'admin',
      method: 'tools/call',
      outcome: 'ok',
      requestId: 'r1',
      durationMs: 3,
    });
    expect(event.chainSeq).toBe(1);
    await expect(sql`update audit_events set outcome = 'tool_error'`).rejects.toThrow(
      /permission denied for table audit_events/,
    );
    await expect(sql`delete from audit_events`).rejects.toThrow(/permission denied for table audit_events/);
    await expect(sql`truncate audit_events`).rejects.toThrow(/permission denied for table audit_events/);
    await expect(
      sql`insert into bulkhead_tokens (id, server, label, secret_hash, created_by) values ('x', 'admin', 'x', '\\x00', 'x')`,
    ).rejects.toThrow(/permission denied for table bulkhead_tokens/);
    await sql`update bulkhead_tokens set last_used_at = now() where id = 'none'`;
    // Starting with migrations on works for this role when nothing is pending: no DDL is attempted.
    expect(await migrate(sql)).toMatchObject({ applied: [] });
    await expect(sql`update bulkhead_tokens set revoked_at = null`).rejects.toThrow(
      /permission denied for table bulkhead_tokens/,
    );
  } finally {
    await sql.end();
  }
});

it('even a role granted DELETE cannot prune by setting the prune flag: only the owner can', async () => {
  await createAuditWriter(db.sql).append({
    server: 'customer',
    method: 'tools/call',
    outcome: 'ok',
    requestId: 'r2',
    durationMs: 1,
  });
  const deleter = `${role}_del`;
  await db.sql.unsafe(`create role ${deleter} login password 'pw-${deleter}'`);
  await db.sql.unsafe(
    `grant usage on schema public to ${deleter}; grant select, delete on audit_events to ${deleter}`,
  );
  const url = new URL(db.url);
  url.username = deleter;
  url.password = `pw-${deleter}`;
  const sql = createSql(url.toString(), { max: 1 });
  try {
    await expect(
      sql.begin(async (tx) => {
        await tx`set local bulkhead.audit_prune = 'on'`;
        await tx`delete from audit_events`;
      }),
    ).rejects.toThrow(/append-only: DELETE refused/);
  } finally {
    await sql.end();
    await db.sql.unsafe(`drop owned by ${deleter}; drop role ${deleter}`);
  }
});
