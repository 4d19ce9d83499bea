import { fileURLToPath } from 'node:url';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { TASKS_EXTENSION } from '@bulkhead/core';
import { startMailCatcher, type MailCatcher } from '@bulkhead/core/mail-catcher';
import { issueTestToken, TaskClient, testApprover } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { seedDemo } from '@bulkhead/demo';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminServer } from './server.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const main = fileURLToPath(new URL('./main.ts', import.meta.url));

let db: TestDatabase;
let catcher: MailCatcher;

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  catcher = await startMailCatcher();
}, 60_000);
afterAll(async () => {
  await db.drop();
  await catcher.close();
});

it('over stdio too: a gated call made as a task, withdrawn or approved, and the task follows', async () => {
  const token = await issueTestToken(db.sql, adminServer, { label: 'Desktop agent over stdio' });
  const client = new TaskClient(
    { name: 'stdio-task-test', version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    },
  );
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', main, '--stdio'],
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: (await db.as('admin')).url,
        BULKHEAD_MIGRATE: 'false',
        BULKHEAD_TOKEN: token,
        BULKHEAD_SMTP_URL: catcher.url,
        BULKHEAD_MAIL_FROM: 'billing@bulkhead.test',
      },
      stderr: 'pipe',
    }),
  );
  try {
    expect((await client.discover()).capabilities.extensions).toEqual({ [TASKS_EXTENSION]: {} });
    const [invoice] = await db.sql<{ number: string }[]>`
      select invoice_number as number from invoice_balances
      where status in ('open', 'overdue') and due_cents >= 5000 order by invoice_number limit 1`;
    const credit = (reason: string) =>
      client.callToolAsTask('issue_credit_note', {
        invoice_number: invoice!.number,
        amount_cents: 1200,
        reason,
      }) as Promise<{ taskId: string; status: string }>;

    const withdrawn = await credit('Filed twice by mistake, withdrawn.');
    expect(withdrawn.status).toBe('working');
    await client.task('tasks/cancel', { taskId: withdrawn.taskId });
    expect(await client.task('tasks/get', { taskId: withdrawn.taskId })).toMatchObject({
      status: 'cancelled',
    });

    const approved = await credit('Goodwill credit agreed on the phone.');
    await (await testApprover(db, 'finance@example.test')).decide(approved.taskId, 'approve');
    let task: Record<string, unknown> = {};
    for (let i = 0; i < 100 && task.status !== 'completed'; i++) {
      task = await client.task('tasks/get', { taskId: approved.taskId });
      if (task.status !== 'completed') await new Promise((r) => setTimeout(r, 100));
    }
    const [note] = await db.sql<{ number: string }[]>`
      select number from credit_notes where approval_id = ${approved.taskId}`;
    expect(task).toMatchObject({
      status: 'completed',
      result: { structuredContent: { credit_note_number: note!.number, amount_cents: 1200 } },
    });
    const events = await db.sql<{ method: string; outcome: string }[]>`
      select method, outcome from audit_events
      where server = 'admin' and method like 'tasks/%' order by seq`;
    expect(events.slice(0, 2)).toEqual([
      { method: 'tasks/cancel', outcome: 'withdrawn' },
      { method: 'tasks/get', outcome: 'ok' },
    ]);
  } finally {
    await client.close();
  }
}, 60_000);
