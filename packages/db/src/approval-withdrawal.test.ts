import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from './connect.ts';
import { createTestDatabase, type TestDatabase } from './test-database.ts';

let db: TestDatabase;
let admin: Sql;
let console_: Sql;
let otherGated: Sql;
let n = 0;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = (await db.as('admin')).sql;
  console_ = (await db.as('console')).sql;
  otherGated = (await db.as('withdraw-fixture')).sql;
}, 120_000);
afterAll(async () => {
  await db.drop();
});

/** A pending request of admin's, filed by the owner (the table's guard lets the owner do anything). */
async function pending(expires = "now() + interval '1 hour'"): Promise<string> {
  const digits = 'abcdefghijkmnpqrstuvwxyz23456789';
  const id = `ap_withdraw${digits[Math.floor(++n / 32)]}${digits[n % 32]}xy`;
  await db.sql.unsafe(
    `insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
       expires_at, request_id, as_task)
     values ('${id}', 'admin', 'issue_credit_note', '{}', '{}', '${'a'.repeat(64)}', 'Credit', ${expires}, 'r', true)`,
  );
  return id;
}

const status = async (id: string) =>
  (
    await db.sql<{ status: string; withdrawn: boolean }[]>`
    select status, withdrawn_at is not null as withdrawn from bulkhead_approvals where id = ${id}`
  )[0];

describe('the approvals guard and withdrawal (migration 0036)', () => {
  it('only the owning server withdraws a pending request; the database stamps when', async () => {
    const id = await pending();
    await expect(
      console_`update bulkhead_approvals set status = 'withdrawn' where id = ${id}`,
    ).rejects.toThrow(/only admin withdraws its approval requests, not console/);
    // Another gated server's role does not even see admin's row (row policy): nothing changes.
    expect(
      (await otherGated`update bulkhead_approvals set status = 'withdrawn' where id = ${id}`).count,
    ).toBe(0);
    expect(await status(id)).toEqual({ status: 'pending', withdrawn: false });
    expect((await admin`update bulkhead_approvals set status = 'withdrawn' where id = ${id}`).count).toBe(1);
    expect(await status(id)).toEqual({ status: 'withdrawn', withdrawn: true });
  });

  it('a withdrawn request is final: no approver decides it, nothing runs it, it is not withdrawn again', async () => {
    const id = await pending();
    await admin`update bulkhead_approvals set status = 'withdrawn' where id = ${id}`;
    await expect(
      console_`update bulkhead_approvals set status = 'approved', decided_by = 'console:x', decided_by_token_id = 'x',
        decided_arguments_hash = arguments_hash where id = ${id}`,
    ).rejects.toThrow(`approval ${id} is final (withdrawn)`);
    await expect(admin`update bulkhead_approvals set status = 'executed' where id = ${id}`).rejects.toThrow(
      `approval ${id} is final (withdrawn)`,
    );
    await expect(admin`update bulkhead_approvals set status = 'withdrawn' where id = ${id}`).rejects.toThrow(
      `approval ${id} is final (withdrawn)`,
    );
  });

  it('only from pending, and not past the expiry', async () => {
    const decided = await pending();
    // Decided by the owner, whom the guard lets do anything (a console decision needs a live approver).
    await db.sql`update bulkhead_approvals set status = 'approved', decided_at = now(), decided_by = 'console:x',
      decided_by_token_id = 'x', decided_arguments_hash = arguments_hash where id = ${decided}`;
    await expect(
      admin`update bulkhead_approvals set status = 'withdrawn' where id = ${decided}`,
    ).rejects.toThrow(`approval ${decided} cannot go from approved to withdrawn`);
    const lapsed = await pending("now() - interval '1 minute'");
    await expect(
      admin`update bulkhead_approvals set status = 'withdrawn' where id = ${lapsed}`,
    ).rejects.toThrow(`approval ${lapsed} has expired`);
    expect(await status(lapsed)).toEqual({ status: 'pending', withdrawn: false });
  });

  it('a new request is not born withdrawn, and whether it is a task cannot change', async () => {
    await expect(
      admin.unsafe(
        `insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
           expires_at, request_id, withdrawn_at)
         values ('ap_borndrawnnnn', 'admin', 't', '{}', '{}', '${'b'.repeat(64)}', 'p', now() + interval '1 hour', 'r', now())`,
      ),
    ).rejects.toThrow('a new approval request is pending and undecided');
    const id = await pending();
    await expect(admin`update bulkhead_approvals set as_task = false where id = ${id}`).rejects.toThrow(
      /permission denied/,
    );
    await expect(db.sql`update bulkhead_approvals set withdrawn_at = now() where id = ${id}`).rejects.toThrow(
      /bulkhead_approvals_withdrawn_check/,
    );
  });
});
