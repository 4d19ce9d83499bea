import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { getApproval, startApprovalExecutor } from '../../approvals/index.ts';
import { createServer, defineTool } from '../../index.ts';
import {
  connectTestClient,
  issueTestToken,
  rawRequest,
  startTestServer,
  testApprover,
  type TestApprover,
  type TestServer,
} from '../../testing/index.ts';

const write = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };
const ro = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const ticket = z.object({ closed: z.boolean(), number: z.string() });

/** Both tools return a column their output does not declare: the runner must keep it from every answer. */
const def = createServer({
  name: 'runner-test',
  version: '1.0.0',
  description: 'Tools whose handlers return a stray column.',
  tools: [
    defineTool({
      name: 'get_ticket',
      title: 'Get ticket',
      description: 'Reads a ticket.',
      scope: 'tickets:read',
      input: z.object({ n: z.number().int() }),
      output: ticket,
      annotations: ro,
      handler: async ({ n }) => ({ closed: false, number: `T-${n}`, internal_cost: 42 }),
    }),
    defineTool({
      name: 'close_ticket',
      title: 'Close ticket',
      description: 'Closes a ticket.',
      scope: 'tickets:write',
      input: z.object({ n: z.number().int(), broken: z.boolean().optional() }),
      output: ticket,
      annotations: write,
      approval: { preview: ({ n }) => `Close ticket T-${n}.` },
      // `broken`: a value outside the output schema, which no path may pass on.
      handler: async ({ n, broken }) =>
        broken
          ? ({ closed: 'yes', number: `T-${n}` } as never)
          : { closed: true, number: `T-${n}`, internal_cost: 42 },
    }),
  ],
});

const logger = pino({ level: 'silent' });
let db: TestDatabase;
let server: TestServer;
let token: string;
let ana: TestApprover;

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startTestServer(def, { db });
  ana = await testApprover(db, 'ana');
  token = await issueTestToken(db.sql, def);
});
afterAll(async () => {
  await server.close();
  await db.drop();
});

/** Runs whatever is approved, as the owning server's executor does, and stops. */
async function execute(): Promise<void> {
  const executor = startApprovalExecutor(def, { sql: server.sql, logger, sweepIntervalMs: 60_000 });
  await executor.ready;
  await executor.drain();
  await executor.stop();
}

/** Files `close_ticket` as a 2025-11-25 task, has it approved and run; returns its approval id. */
async function approvedRun(args: Record<string, unknown>): Promise<string> {
  const created = await rawRequest(server.url, token, 'tools/call', {
    name: 'close_ticket',
    arguments: args,
    task: { ttl: 60_000 },
  });
  const id = (created.result!.task as { taskId: string }).taskId;
  await ana.decide(id, 'approve');
  await execute();
  return id;
}

describe('one handler runner: the live call and the approved one hold a result to the tool’s output', () => {
  it('the live call answers without the stray column', async () => {
    const client = await connectTestClient(server.url, token);
    const live = await client.callTool({ name: 'get_ticket', arguments: { n: 1 } });
    await client.close();
    expect(live.structuredContent).toEqual({ closed: false, number: 'T-1' });
    expect(JSON.stringify(live.content)).not.toContain('internal_cost');
  });

  it('an approved call stores, and answers in get_approval_status and tasks/result, its result without it', async () => {
    const id = await approvedRun({ n: 7 });
    const stored = (await getApproval(db.sql, id))!;
    expect([stored.status, stored.result]).toEqual(['executed', { closed: true, number: 'T-7' }]);

    const client = await connectTestClient(server.url, token);
    const status = await client.callTool({ name: 'get_approval_status', arguments: { approval_id: id } });
    await client.close();
    expect(status.structuredContent).toMatchObject({
      status: 'executed',
      result: { closed: true, number: 'T-7' },
    });
    expect((status.structuredContent as { result: unknown }).result).toEqual({ closed: true, number: 'T-7' });
    expect(JSON.stringify(status.content)).not.toContain('internal_cost');

    const answer = await rawRequest(server.url, token, 'tasks/result', { taskId: id });
    expect(answer.result).toEqual({
      content: [{ type: 'text', text: expect.stringContaining('T-7') }],
      structuredContent: { closed: true, number: 'T-7' },
      _meta: { 'io.modelcontextprotocol/related-task': { taskId: id } },
    });
    expect(JSON.stringify(answer.result)).not.toContain('internal_cost');
  });

  it('a value outside the output schema is an internal error on the approved path too, its changes not kept', async () => {
    const id = await approvedRun({ n: 8, broken: true });
    const stored = (await getApproval(db.sql, id))!;
    expect([stored.status, stored.failure, stored.result]).toEqual(['failed', 'internal_error', null]);
    expect(stored.error).toMatch(
      /^Internal error, incident [0-9a-f]{8}; none of its changes were kept\. The details are in the server's log under that id\.$/,
    );
  });
});
