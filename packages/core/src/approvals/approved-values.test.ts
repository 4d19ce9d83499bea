import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import type { Client } from '@modelcontextprotocol/client';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createServer, defineTool, quoted, ToolError } from '../index.ts';
import {
  connectTestClient,
  issueTestToken,
  startTestServer,
  testApprover,
  type TestApprover,
  type TestServer,
} from '../testing/index.ts';
import { getApproval, startApprovalExecutor, type ApprovalExecutor } from './index.ts';

// A gate's values, as the kit keeps them: read when filed, stored, shown in the preview, read again
// in the run's transaction; the action runs only on the approved ones, and is refused otherwise.

const def = createServer({
  name: 'values-test',
  version: '1.0.0',
  description: 'A gated server whose effect uses values the arguments do not fix.',
  tools: [
    defineTool({
      name: 'greet_contact',
      title: 'Greet contact',
      description: 'Records a greeting to a contact at the address on file.',
      scope: 'contacts:write',
      input: z.object({ contact_id: z.string().regex(/^K-\d+$/) }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
      approval: {
        values: async ({ contact_id }, ctx) => {
          const [c] = await ctx.sql<{ address: string; display_name: string }[]>`
            select address, display_name from contacts where id = ${contact_id} for update`;
          if (!c) throw new ToolError(`contact ${contact_id} not found`);
          return { address: c.address, display_name: c.display_name };
        },
        preview: ({ contact_id }, _ctx, v) =>
          `Greet ${quoted(v.display_name)} (${contact_id}) at ${quoted(v.address)}.`,
      },
      handler: async ({ contact_id }, ctx) => {
        const v = ctx.approval!.values;
        await ctx.sql`insert into greetings (approval_id, contact_id, address, display_name)
          values (${ctx.approval!.id}, ${contact_id}, ${v.address}, ${v.display_name})`;
        return { greeted: v.address };
      },
    }),
  ],
});

const logger = pino({ level: 'silent' });
let db: TestDatabase;
let server: TestServer;
let client: Client;
let ana: TestApprover;
let executor: ApprovalExecutor;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`create table contacts (id text primary key, address text not null, display_name text not null)`;
  await db.sql`create table greetings (approval_id text, contact_id text, address text, display_name text)`;
  server = await startTestServer(def, { db });
  await db.sql`grant select, update on contacts to bulkhead_values_test`;
  await db.sql`grant select, insert on greetings to bulkhead_values_test`;
  ana = await testApprover(db, 'ana');
  client = await connectTestClient(server.url, await issueTestToken(db.sql, def), 'values-test');
  executor = startApprovalExecutor(def, { sql: server.sql, logger, sweepIntervalMs: 60_000 });
  await executor.ready;
});
afterAll(async () => {
  await executor?.stop();
  await client?.close();
  await server?.close();
  await db?.drop();
});

/** Files greet_contact for `id` (the contact row set as given first); returns the approval id. */
async function file(id: string, address: string, name: string): Promise<string> {
  await db.sql`insert into contacts values (${id}, ${address}, ${name})
    on conflict (id) do update set address = excluded.address, display_name = excluded.display_name`;
  const r = await client.callTool({ name: 'greet_contact', arguments: { contact_id: id } });
  expect(r.isError).toBeFalsy();
  return (r.structuredContent as { approval_id: string }).approval_id;
}

async function approve(id: string) {
  await ana.decide(id, 'approve');
  await executor.drain();
  return (await getApproval(db.sql, id))!;
}

const greetings = (id: string) =>
  db.sql`select contact_id, address, display_name from greetings where approval_id = ${id}`;

describe('approval values', () => {
  it('are stored with the request, named by its preview, and are what the effect uses', async () => {
    const id = await file('K-1', 'ana@example.test', 'Ana "the boss" Berg');
    const filed = (await getApproval(db.sql, id))!;
    expect(filed.approvedValues).toEqual({
      address: 'ana@example.test',
      display_name: 'Ana "the boss" Berg',
    });
    expect(filed.preview).toBe('Greet "Ana \\"the boss\\" Berg" (K-1) at "ana@example.test".');
    expect(await approve(id)).toMatchObject({ status: 'executed', result: { greeted: 'ana@example.test' } });
    expect(await greetings(id)).toEqual([
      { contact_id: 'K-1', address: 'ana@example.test', display_name: 'Ana "the boss" Berg' },
    ]);
  });

  it('refuse the action when what they read changed after the request, naming each change; nothing runs', async () => {
    const id = await file('K-2', 'bo@example.test', 'Bo');
    await db.sql`update contacts set address = 'bo@attacker.example', display_name = 'Bo B.' where id = 'K-2'`;
    expect(await approve(id)).toMatchObject({
      status: 'failed',
      failure: 'refused',
      result: null,
      error:
        'the address and display name changed after approval; nothing was done — call greet_contact again so that a person approves it as it is now',
    });
    expect(await greetings(id)).toEqual([]);
    const [event] = await db.sql`
      select outcome from audit_events where approval_id = ${id} and method = 'approvals/execute'`;
    expect(event).toEqual({ outcome: 'forbidden' });
  });

  it('refuse a request filed without them, and pass on the reader’s own refusal', async () => {
    const old = await file('K-3', 'cy@example.test', 'Cy');
    // As a request filed before the tool named its values (the schema owner can still write the column).
    await db.sql`update bulkhead_approvals set approved_values = null where id = ${old}`;
    expect(await approve(old)).toMatchObject({
      status: 'failed',
      failure: 'refused',
      error:
        'this request was filed before greet_contact named the values its effect uses, so they were not approved; nothing was done — call greet_contact again so that a person approves it as it is now',
    });
    const gone = await file('K-4', 'di@example.test', 'Di');
    await db.sql`delete from contacts where id = 'K-4'`;
    expect(await approve(gone)).toMatchObject({
      status: 'failed',
      failure: 'tool_error',
      error: 'contact K-4 not found',
    });
    expect(await greetings(old)).toEqual([]);
    expect(await greetings(gone)).toEqual([]);
  });
});
