import { issueToken } from '@bulkhead/core/operator';
import {
  chromiumLaunchOptions,
  connectTaskClient,
  issueTestToken,
  rawRequest,
  type TaskClient,
} from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { seedDemo } from '@bulkhead/demo';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { decideInConsole as decide, signInToConsole } from './console-page.ts';
import { spawnServer, type ServerProcess } from './helpers.ts';

let db: TestDatabase;
let adminDb: string;
let admin: ServerProcess;
let consoleServer: ServerProcess;
let browser: Browser;
let page: Page;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  adminDb = (await db.as('admin')).url;
  [admin, consoleServer] = await Promise.all([
    spawnServer('admin', adminDb),
    spawnServer('console', (await db.as('console')).url),
  ]);
  browser = await chromium.launch(chromiumLaunchOptions());
  token = await issueTestToken(db.sql, adminServer, { label: 'Agent framework (billing)' });
  const { token: approver } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Jonas (finance)',
    scopes: ['approvals:decide'],
    expiresAt: null,
    createdBy: 'test',
  });
  page = await signInToConsole(browser, consoleServer.url.origin, approver);
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await Promise.all([admin?.stop(), consoleServer?.stop()]);
  await db.drop();
});

/** Stops the admin process and starts a new one where its clients expect it: nothing survives but the database. */
async function restartAdmin(): Promise<void> {
  const port = Number(admin.url.port);
  await admin.stop();
  admin = await spawnServer('admin', adminDb, {}, port);
}

const used = new Set<string>();
/** An invoice with at least €50 still due that no other test credits. */
async function creditable(): Promise<{ number: string; due: number }> {
  const rows = await db.sql<{ number: string; due: number }[]>`
    select invoice_number as number, due_cents::int as due from invoice_balances
    where status in ('open', 'overdue') and due_cents >= 5000 order by invoice_number`;
  const free = rows.find((r) => !used.has(r.number))!;
  used.add(free.number);
  return free;
}

/** A person's decision in the console, in Chromium, as an approver makes it. */
const decideInConsole = (id: string, verdict: 'approve' | 'reject', reason: string) =>
  decide(page, consoleServer.url.origin, { id, verdict, reason });

async function settled(get: () => Promise<Record<string, unknown>>): Promise<Record<string, unknown>> {
  for (let i = 0; i < 200; i++) {
    const task = await get();
    if (task.status !== 'working') return task;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the task did not settle');
}

async function story(id: string): Promise<string[]> {
  const rows = await db.sql<{ method: string; outcome: string }[]>`
    select method, outcome from audit_events where approval_id = ${id} order by seq`;
  return rows.map((r) => `${r.method} ${r.outcome}`);
}

const creditNote = async (id: string) =>
  db.sql<{ number: string; invoice_number: string; amount_cents: number }[]>`
    select number, invoice_number, amount_cents::int as amount_cents from credit_notes where approval_id = ${id}`;

describe('issue_credit_note as a task with the SDK’s client (2026-07-28)', () => {
  let client: TaskClient;
  beforeAll(async () => {
    client = await connectTaskClient(admin.url, token, 'agent-framework');
  });
  afterAll(async () => client.close());

  const get = (taskId: string) => () => client.task('tasks/get', { taskId });

  it('waits for the approval, survives restarts, and completes with the credit note number', async () => {
    const invoice = await creditable();
    const created = await client.callToolAsTask('issue_credit_note', {
      invoice_number: invoice.number,
      amount_cents: 2500,
      reason: 'Goodwill credit for the late delivery.',
    });
    expect(created).toMatchObject({
      resultType: 'task',
      status: 'working',
      ttlMs: null,
      pollIntervalMs: 5000,
    });
    const id = created.taskId as string;
    expect(created.statusMessage).toMatch(
      new RegExp(
        `^Waiting for a person to approve issue_credit_note \\(approval ${id}\\); nothing has been done yet\\.`,
      ),
    );
    expect(await creditNote(id)).toEqual([]);

    await restartAdmin();
    const waiting = await client.task('tasks/get', { taskId: id });
    expect(waiting).toMatchObject({ taskId: id, status: 'working', createdAt: created.createdAt });

    await decideInConsole(id, 'approve', 'Customer called; agreed with sales.');
    await restartAdmin();
    const done = await settled(get(id));
    const [note] = await creditNote(id);
    expect(note).toEqual({
      number: expect.stringMatching(/^CN-\d{4}-\d{4,}$/),
      invoice_number: invoice.number,
      amount_cents: 2500,
    });
    expect(done).toMatchObject({
      taskId: id,
      status: 'completed',
      statusMessage: 'Approved by console:Jonas (finance) and carried out.',
      result: {
        structuredContent: {
          credit_note_number: note!.number,
          invoice_number: invoice.number,
          amount_cents: 2500,
          due_cents: invoice.due - 2500,
        },
      },
    });
    expect((done.result as { content: { text: string }[] }).content[0]!.text).toContain(note!.number);
    // Asked again after another restart: the stored result of the one run, not a second one.
    await restartAdmin();
    expect(await client.task('tasks/get', { taskId: id })).toEqual(done);
    expect(await creditNote(id)).toHaveLength(1);
    expect(await story(id)).toEqual([
      'tools/call pending_approval',
      'approvals/decide approved',
      'approvals/execute executed',
    ]);
  }, 90_000);

  it('rejected in the console: the task ends cancelled, with the reason', async () => {
    const invoice = await creditable();
    const { taskId } = (await client.callToolAsTask('issue_credit_note', {
      invoice_number: invoice.number,
      amount_cents: 9900,
      reason: 'The customer asked for a discount.',
    })) as { taskId: string };
    await decideInConsole(taskId, 'reject', 'No discount without a signed order change.');
    await restartAdmin();
    const done = await settled(get(taskId));
    expect(done).toMatchObject({
      status: 'cancelled',
      statusMessage:
        'Rejected by console:Jonas (finance); nothing was done and it will never run. Reason: No discount without a signed order change.',
    });
    expect(await creditNote(taskId)).toEqual([]);
  }, 60_000);

  it('withdrawn with tasks/cancel: an approver can no longer approve it', async () => {
    const invoice = await creditable();
    const { taskId } = (await client.callToolAsTask('issue_credit_note', {
      invoice_number: invoice.number,
      amount_cents: 1000,
      reason: 'Entered by mistake, to be withdrawn.',
    })) as { taskId: string };
    // The approver has the request open when the client withdraws it.
    await page.goto(`${consoleServer.url.origin}/approvals/${taskId}`);
    await page.getByRole('button', { name: 'Approve and run' }).waitFor();
    await restartAdmin();
    await client.task('tasks/cancel', { taskId });
    await page.getByLabel('Reason').fill('Looks fine.');
    await page.getByRole('button', { name: 'Approve and run' }).click();
    await expect(page.getByRole('alert').first().textContent()).resolves.toMatch(
      new RegExp(
        `^Approval ${taskId} was withdrawn by its requester \\(Agent framework \\(billing\\)\\) on .+ before anyone decided; it will never run\\.$`,
      ),
    );
    await page.goto(`${consoleServer.url.origin}/approvals/${taskId}`);
    await expect(page.locator('.badge').first().textContent()).resolves.toBe('Withdrawn by the requester');
    expect(await page.getByRole('button', { name: 'Approve and run' }).count()).toBe(0);
    expect(await client.task('tasks/get', { taskId })).toMatchObject({
      status: 'cancelled',
      statusMessage: 'Withdrawn by the client before anyone decided; nothing was done and it will never run.',
    });
    expect(await creditNote(taskId)).toEqual([]);
    expect(await story(taskId)).toEqual(['tools/call pending_approval', 'tasks/cancel withdrawn']);
  }, 60_000);
});

describe('issue_credit_note as a task with a raw 2025-11-25 client', () => {
  const rpc = (method: string, params: Record<string, unknown>) =>
    rawRequest(admin.url, token, method, params);
  const get = (taskId: string) => async () => (await rpc('tasks/get', { taskId })).result!;

  it('tasks/result waits through the decision and answers the credit note; a restart in between changes nothing', async () => {
    const invoice = await creditable();
    const created = await rpc('tools/call', {
      name: 'issue_credit_note',
      arguments: {
        invoice_number: invoice.number,
        amount_cents: 3000,
        reason: 'Credit for the damaged parcel.',
      },
      task: { ttl: 86_400_000 },
    });
    const task = created.result!.task as { taskId: string; status: string; ttl: null };
    expect(task).toMatchObject({ status: 'working', ttl: null, pollInterval: 5000 });
    const id = task.taskId;
    await restartAdmin();
    expect((await rpc('tasks/get', { taskId: id })).result).toMatchObject({ taskId: id, status: 'working' });
    const listed = (await rpc('tasks/list', {})).result!.tasks as { taskId: string }[];
    expect(listed.map((t) => t.taskId)).toContain(id);

    const answer = rpc('tasks/result', { taskId: id });
    await decideInConsole(id, 'approve', 'Photo of the parcel attached to the ticket.');
    const result = (await answer).result!;
    const [note] = await creditNote(id);
    expect(result).toMatchObject({
      structuredContent: {
        credit_note_number: note!.number,
        invoice_number: invoice.number,
        amount_cents: 3000,
      },
      _meta: { 'io.modelcontextprotocol/related-task': { taskId: id } },
    });
    expect(result).not.toHaveProperty('isError');
    await restartAdmin();
    expect((await rpc('tasks/get', { taskId: id })).result).toMatchObject({ status: 'completed' });
    expect((await rpc('tasks/result', { taskId: id })).result).toEqual(result);
    expect(await creditNote(id)).toHaveLength(1);
  }, 90_000);

  it('rejected: cancelled, and tasks/result answers the reason; withdrawn: no approver can approve it', async () => {
    const rejectedInvoice = await creditable();
    const rejected = await rpc('tools/call', {
      name: 'issue_credit_note',
      arguments: {
        invoice_number: rejectedInvoice.number,
        amount_cents: 4000,
        reason: 'Customer is unhappy.',
      },
      task: {},
    });
    const rejectedId = (rejected.result!.task as { taskId: string }).taskId;
    await decideInConsole(rejectedId, 'reject', 'Unhappy is not a reason for a credit.');
    expect(await settled(get(rejectedId))).toMatchObject({
      status: 'cancelled',
      statusMessage:
        'Rejected by console:Jonas (finance); nothing was done and it will never run. Reason: Unhappy is not a reason for a credit.',
    });
    expect((await rpc('tasks/result', { taskId: rejectedId })).result).toMatchObject({
      content: [
        {
          type: 'text',
          text: 'Rejected by console:Jonas (finance); nothing was done and it will never run. Reason: Unhappy is not a reason for a credit.',
        },
      ],
      isError: true,
    });

    const withdrawnInvoice = await creditable();
    const filed = await rpc('tools/call', {
      name: 'issue_credit_note',
      arguments: {
        invoice_number: withdrawnInvoice.number,
        amount_cents: 1500,
        reason: 'Duplicate of another request.',
      },
      task: {},
    });
    const withdrawnId = (filed.result!.task as { taskId: string }).taskId;
    expect((await rpc('tasks/cancel', { taskId: withdrawnId })).result).toMatchObject({
      taskId: withdrawnId,
      status: 'cancelled',
    });
    await page.goto(`${consoleServer.url.origin}/`);
    expect(await page.getByRole('link', { name: `Review and decide ${withdrawnId}` }).count()).toBe(0);
    await page.goto(`${consoleServer.url.origin}/approvals/${withdrawnId}`);
    await expect(page.locator('.badge').first().textContent()).resolves.toBe('Withdrawn by the requester');
    expect(await page.getByRole('button', { name: 'Approve and run' }).count()).toBe(0);
    expect(await creditNote(withdrawnId)).toEqual([]);
  }, 60_000);
});
