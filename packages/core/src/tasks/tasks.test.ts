import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApprovalDecisionError, getApproval, startApprovalExecutor } from '../approvals/index.ts';
import { createServer, defineTool, ToolError } from '../index.ts';
import {
  connectTaskClient,
  connectTestClient,
  issueTestToken,
  rawRequest,
  startTestServer,
  testApprover,
  type TaskClient,
  type TestApprover,
  type TestServer,
} from '../testing/index.ts';

const write = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true };
const ro = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

function gatedServer(name: string) {
  return createServer({
    name,
    version: '1.0.0',
    description: 'A gated server for the task tests.',
    tools: [
      defineTool({
        name: 'send_note',
        title: 'Send note',
        description: 'Sends a note.',
        scope: 'notes:write',
        input: z.object({ text: z.string().min(1).max(200) }),
        annotations: write,
        approval: { preview: ({ text }) => `Send the note "${text}".` },
        handler: async ({ text }, ctx) => {
          await ctx.sql`insert into task_effects (approval_id, text) values (${ctx.approval!.id}, ${text})`;
          return { sent: true, text, number: `N-${text.length}` };
        },
      }),
      defineTool({
        name: 'refuse_note',
        title: 'Refuse note',
        description: 'Fails once approved.',
        scope: 'notes:write',
        input: z.object({ text: z.string() }),
        annotations: write,
        approval: { preview: ({ text }) => `Try "${text}".` },
        handler: async ({ text }) => {
          throw new ToolError(`note "${text}" cannot be sent — the mailbox is closed`);
        },
      }),
      defineTool({
        name: 'count_notes',
        title: 'Count notes',
        description: 'Counts notes.',
        scope: 'notes:read',
        input: z.object({}),
        output: z.object({ count: z.number() }),
        annotations: ro,
        handler: async (_args, ctx) => {
          const [row] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from task_effects`;
          return { count: row!.n };
        },
      }),
    ],
  });
}

const def = gatedServer('task-test');
const other = gatedServer('task-other');
const plain = createServer({
  name: 'task-plain',
  version: '1.0.0',
  description: 'No gate, so no tasks.',
  tools: [
    defineTool({
      name: 'ping_me',
      title: 'Ping me',
      description: 'Answers pong.',
      scope: 'ping:read',
      input: z.object({}),
      annotations: ro,
      handler: async () => ({ pong: true }),
    }),
  ],
});

const logger = pino({ level: 'silent' });
let db: TestDatabase;
let server: TestServer;
let replica: TestServer;
let otherServer: TestServer;
let plainServer: TestServer;
let token: string;
let stranger: string;
let ana: TestApprover;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`create table task_effects (approval_id text not null, text text not null)`;
  server = await startTestServer(def, { db });
  replica = await startTestServer(def, { db });
  otherServer = await startTestServer(other, { db });
  plainServer = await startTestServer(plain, { db });
  await db.sql`grant select, insert on task_effects to bulkhead_task_test, bulkhead_task_other`;
  ana = await testApprover(db, 'ana');
  token = await issueTestToken(db.sql, def, { label: 'Claude on Ana’s laptop' });
  stranger = await issueTestToken(db.sql, def, { label: 'Another client' });
});
afterAll(async () => {
  await Promise.all([server.close(), replica.close(), otherServer.close(), plainServer.close()]);
  await db.drop();
});

/** Runs whatever is approved, as the owning server's executor does, and stops. */
async function execute(): Promise<void> {
  const executor = startApprovalExecutor(def, { sql: server.sql, logger, sweepIntervalMs: 60_000 });
  await executor.ready;
  await executor.drain();
  await executor.stop();
}

async function events(filter: { method?: string; approvalId?: string; token?: string }) {
  return db.sql<
    { method: string; outcome: string; tool: string | null; arguments: unknown; summary: unknown }[]
  >`
    select method, outcome, tool, arguments, result_summary as summary from audit_events
    where server = ${def.name}
      ${filter.method ? db.sql`and method = ${filter.method}` : db.sql``}
      ${filter.approvalId ? db.sql`and approval_id = ${filter.approvalId}` : db.sql``}
    order by seq`;
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SERVER_INFO = {
  'io.modelcontextprotocol/serverInfo': {
    name: 'task-test',
    title: 'task-test',
    version: '1.0.0',
    description: 'A gated server for the task tests.',
  },
};
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw-2026', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
/** A 2026-07-28 request as it goes over the wire, with its standard headers. */
const modern = (method: string, params: Record<string, unknown>, name?: string) =>
  rawRequest(
    server.url,
    token,
    method,
    { ...params, _meta: ENVELOPE },
    {
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name ? { 'mcp-name': name } : {}),
    },
  );

describe('a gated call made as a task, with the SDK’s client (2026-07-28)', () => {
  let client: TaskClient;
  beforeAll(async () => {
    client = await connectTaskClient(server.url, token);
  });
  afterAll(async () => client.close());

  it('is declared: the tasks extension in server/discover; gated tools carry no execution field on this wire', async () => {
    const found = await client.discover();
    expect(found.capabilities.extensions).toEqual({ 'io.modelcontextprotocol/tasks': {} });
    expect((found.capabilities as Record<string, unknown>).tasks).toBeUndefined();
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'send_note')).not.toHaveProperty('execution');
  });

  it('answers the task, tied to the approval; it follows the approval to completed with the tool’s own result', async () => {
    const created = await client.callToolAsTask('send_note', { text: 'hello' });
    const id = created.taskId as string;
    expect(id).toMatch(/^ap_[a-z2-9]{12}$/);
    const approval = (await getApproval(db.sql, id))!;
    expect(created).toEqual({
      resultType: 'task',
      taskId: id,
      status: 'working',
      statusMessage: `Waiting for a person to approve send_note (approval ${id}); nothing has been done yet. Undecided, it lapses at ${approval.expiresAt.toISOString()}.`,
      createdAt: approval.requestedAt.toISOString(),
      lastUpdatedAt: approval.requestedAt.toISOString(),
      ttlMs: null,
      pollIntervalMs: 5000,
      _meta: SERVER_INFO,
    });
    expect(approval).toMatchObject({ status: 'pending', asTask: true, tool: 'send_note' });
    expect(await client.task('tasks/get', { taskId: id })).toMatchObject({
      taskId: id,
      status: 'working',
      pollIntervalMs: 5000,
    });

    const decided = await ana.decide(id, 'approve');
    expect(await client.task('tasks/get', { taskId: id })).toMatchObject({
      status: 'working',
      statusMessage: 'Approved by console:ana; send_note runs now, exactly once.',
      lastUpdatedAt: decided.decidedAt!.toISOString(),
      pollIntervalMs: 1000,
    });
    await execute();
    const done = await client.task('tasks/get', { taskId: id });
    const ran = (await getApproval(db.sql, id))!;
    expect(done).toEqual({
      taskId: id,
      status: 'completed',
      statusMessage: 'Approved by console:ana and carried out.',
      createdAt: ran.requestedAt.toISOString(),
      lastUpdatedAt: ran.executedAt!.toISOString(),
      ttlMs: null,
      result: {
        content: [{ type: 'text', text: expect.stringContaining('N-5') }],
        structuredContent: { sent: true, text: 'hello', number: 'N-5' },
      },
      _meta: SERVER_INFO,
    });
    // On the wire: the standard result shape of tasks/get, the result inlined without related-task.
    const wire = await modern('tasks/get', { taskId: id }, id);
    expect(wire.result).toEqual({ ...done, resultType: 'complete' });
    expect(await db.sql`select text from task_effects where approval_id = ${id}`).toEqual([
      { text: 'hello' },
    ]);
  });

  it('is the same task on a second replica and after a restart: state and result come from the database', async () => {
    const created = await client.callToolAsTask('send_note', { text: 'durable' });
    const id = created.taskId as string;
    await ana.decide(id, 'approve');
    await execute();
    const here = await client.task('tasks/get', { taskId: id });
    const there = await connectTaskClient(replica.url, token);
    expect(await there.task('tasks/get', { taskId: id })).toEqual(here);
    await there.close();
    // A new process on the same database: nothing of the task lived in the old one.
    const restarted = await startTestServer(def, { db });
    const again = await connectTaskClient(restarted.url, token);
    expect(await again.task('tasks/get', { taskId: id })).toEqual(here);
    await again.close();
    await restarted.close();
    expect(here).toMatchObject({ status: 'completed', result: { structuredContent: { number: 'N-7' } } });
    expect(await db.sql`select count(*)::int as n from task_effects where approval_id = ${id}`).toEqual([
      { n: 1 },
    ]);
  });

  it('a client polling a week later finds the same result, and an undecided request lapsed', async () => {
    const ran = (await client.callToolAsTask('send_note', { text: 'weekly' })) as { taskId: string };
    await ana.decide(ran.taskId, 'approve');
    await execute();
    const then = await client.task('tasks/get', { taskId: ran.taskId });
    const waiting = (await client.callToolAsTask('send_note', { text: 'forgotten' })) as { taskId: string };
    // A week passes (the rows are moved back; as the table's owner, the guard lets the test do that).
    await db.sql`
      update bulkhead_approvals set requested_at = requested_at - interval '7 days',
        expires_at = expires_at - interval '7 days', decided_at = decided_at - interval '7 days',
        executed_at = executed_at - interval '7 days'
      where id in ${db.sql([ran.taskId, waiting.taskId])}`;
    const week = (d: unknown) => new Date(new Date(d as string).getTime() - 7 * 86_400_000).toISOString();
    expect(await client.task('tasks/get', { taskId: ran.taskId })).toEqual({
      ...then,
      createdAt: week(then.createdAt),
      lastUpdatedAt: week(then.lastUpdatedAt),
    });
    const lapsed = (await getApproval(db.sql, waiting.taskId))!;
    expect(await client.task('tasks/get', { taskId: waiting.taskId })).toMatchObject({
      status: 'cancelled',
      statusMessage: `Nobody decided before ${lapsed.expiresAt.toISOString()}; nothing was done and it will never run.`,
      lastUpdatedAt: lapsed.expiresAt.toISOString(),
    });
    // Withdrawing it now marks it expired (with its event) instead: it is too late for anything.
    await client.task('tasks/cancel', { taskId: waiting.taskId });
    expect((await getApproval(db.sql, waiting.taskId))!.status).toBe('expired');
    expect((await events({ approvalId: waiting.taskId })).map((e) => `${e.method} ${e.outcome}`)).toEqual([
      'tools/call pending_approval',
      'approvals/expire expired',
      'tasks/cancel ok',
    ]);
  });

  it('a rejected request ends cancelled with the reason; nothing ran', async () => {
    const { taskId } = (await client.callToolAsTask('send_note', { text: 'nope' })) as { taskId: string };
    await ana.decide(taskId, 'reject', { reason: 'Not to this customer.' });
    const got = await client.task('tasks/get', { taskId });
    expect(got).toMatchObject({
      status: 'cancelled',
      statusMessage:
        'Rejected by console:ana; nothing was done and it will never run. Reason: Not to this customer.',
    });
    expect(got).not.toHaveProperty('result');
    expect(got).not.toHaveProperty('pollIntervalMs');
  });

  it('a run that fails ends completed with the tool error (2026-07-28 keeps failed for JSON-RPC errors)', async () => {
    const { taskId } = (await client.callToolAsTask('refuse_note', { text: 'x' })) as { taskId: string };
    await ana.decide(taskId, 'approve');
    await execute();
    expect(await client.task('tasks/get', { taskId })).toMatchObject({
      status: 'completed',
      statusMessage:
        'Approved by console:ana, but it did not complete: note "x" cannot be sent — the mailbox is closed',
      result: {
        content: [{ type: 'text', text: 'note "x" cannot be sent — the mailbox is closed' }],
        isError: true,
      },
    });
  });

  it('tasks/cancel withdraws a request no one decided: audited, an approver can no longer approve it', async () => {
    const { taskId } = (await client.callToolAsTask('send_note', { text: 'oops' })) as { taskId: string };
    expect(await client.task('tasks/cancel', { taskId })).toEqual({ _meta: SERVER_INFO });
    const withdrawn = (await getApproval(db.sql, taskId))!;
    expect(withdrawn).toMatchObject({ status: 'withdrawn', decidedAt: null });
    expect(withdrawn.withdrawnAt).toBeInstanceOf(Date);
    expect(await client.task('tasks/get', { taskId })).toMatchObject({
      status: 'cancelled',
      statusMessage: 'Withdrawn by the client before anyone decided; nothing was done and it will never run.',
      lastUpdatedAt: withdrawn.withdrawnAt!.toISOString(),
    });
    const refused = await ana.decide(taskId, 'approve').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ApprovalDecisionError);
    expect(refused).toMatchObject({ code: 'withdrawn' });
    expect((refused as Error).message).toMatch(
      new RegExp(
        `^approval ${taskId} was withdrawn by its requester \\(Claude on Ana’s laptop\\) on \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC before anyone decided; it will never run$`,
      ),
    );
    // Cancelling again is acknowledged (on the wire: an empty complete result) and changes nothing;
    // a decided one is not withdrawn.
    expect((await modern('tasks/cancel', { taskId }, taskId)).result).toEqual({
      resultType: 'complete',
      _meta: SERVER_INFO,
    });
    const story = await events({ approvalId: taskId });
    expect(story.map((e) => [e.method, e.outcome])).toEqual([
      ['tools/call', 'pending_approval'],
      ['tasks/cancel', 'withdrawn'],
      ['tasks/cancel', 'ok'],
    ]);
    expect(story[1]!.summary).toEqual({
      task_status: 'cancelled',
      approval_status: 'withdrawn',
      withdrawn: true,
    });
    expect(story[0]!.summary).toMatchObject({ status: 'pending_approval', task: true });

    const approved = (await client.callToolAsTask('send_note', { text: 'keep' })) as { taskId: string };
    await ana.decide(approved.taskId, 'approve');
    await client.task('tasks/cancel', { taskId: approved.taskId });
    expect((await getApproval(db.sql, approved.taskId))!.status).toBe('approved');
    await execute();
    expect((await getApproval(db.sql, approved.taskId))!.status).toBe('executed');
  });

  it('tasks/update is acknowledged (nothing is ever outstanding); tasks/result and tasks/list are not on this wire', async () => {
    const { taskId } = (await client.callToolAsTask('send_note', { text: 'upd' })) as { taskId: string };
    expect(
      await client.task('tasks/update', { taskId, inputResponses: { x: { action: 'accept' } } }),
    ).toEqual({
      _meta: SERVER_INFO,
    });
    // The SDK's client will not even send them on this wire; a raw one gets -32601 (audited by the HTTP layer).
    for (const method of ['tasks/result', 'tasks/list']) {
      const answer = await modern(method, { taskId });
      expect(answer.error).toMatchObject({ code: -32601 });
      const [last] = await db.sql`
        select method, outcome from audit_events where server = ${def.name} order by seq desc limit 1`;
      expect(last).toEqual({ method, outcome: 'bad_request' });
    }
  });

  it('a task of another token, another server or another customer does not exist for the caller', async () => {
    const { taskId } = (await client.callToolAsTask('send_note', { text: 'mine' })) as { taskId: string };
    const notFound = {
      code: -32602,
      message: `Task ${taskId} not found: no task of this token on task-test has that id.`,
    };
    const theirs = await connectTaskClient(server.url, stranger);
    for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update'])
      await expect(theirs.task(method, { taskId })).rejects.toMatchObject(notFound);
    await theirs.close();
    const customerToken = await issueTestToken(db.sql, def, { customerId: 'C-2002', label: 'bound' });
    const bound = await connectTaskClient(server.url, customerToken);
    await expect(bound.task('tasks/get', { taskId })).rejects.toMatchObject({ code: -32602 });
    await bound.close();
    const elsewhere = await connectTaskClient(
      otherServer.url,
      await issueTestToken(db.sql, other, { label: 'other server' }),
    );
    await expect(elsewhere.task('tasks/get', { taskId })).rejects.toMatchObject({
      code: -32602,
      message: `Task ${taskId} not found: no task of this token on task-other has that id.`,
    });
    await elsewhere.close();
    // A pending_approval answer (no task asked for) is no task either.
    const classic = await connectTestClient(server.url, token);
    const pending = await classic.callTool({ name: 'send_note', arguments: { text: 'classic' } });
    await classic.close();
    const classicId = (pending.structuredContent as { approval_id: string }).approval_id;
    await expect(client.task('tasks/get', { taskId: classicId })).rejects.toMatchObject({ code: -32602 });
    expect((await getApproval(db.sql, taskId))!.status).toBe('pending');
  });

  it('a request without the extension gets today’s pending_approval, and task methods -32021', async () => {
    const classic = await connectTestClient(server.url, token);
    const result = await classic.callTool({ name: 'send_note', arguments: { text: 'no task' } });
    expect(result.structuredContent).toMatchObject({ status: 'pending_approval' });
    const id = (result.structuredContent as { approval_id: string }).approval_id;
    expect((await getApproval(db.sql, id))!.asTask).toBe(false);
    const status = await classic.callTool({ name: 'get_approval_status', arguments: { approval_id: id } });
    expect(status.structuredContent).toMatchObject({ status: 'pending', approval_id: id });
    await expect(
      classic.request({ method: 'tasks/get', params: { taskId: id } }, z.looseObject({})),
    ).rejects.toMatchObject({
      code: -32021,
      data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    });
    await classic.close();
  });

  it('a read tool answers as usual even when the client declares tasks', async () => {
    const result = await client.callToolAsTask('count_notes');
    expect(result).toMatchObject({ structuredContent: { count: expect.any(Number) } });
    expect(result).not.toHaveProperty('taskId');
  });
});

describe('a gated call made as a task by a raw 2025-11-25 client', () => {
  const rpc = (method: string, params: Record<string, unknown> = {}, bearer = token) =>
    rawRequest(server.url, bearer, method, params);

  it('is declared: capabilities.tasks in initialize, execution.taskSupport on gated tools only', async () => {
    const init = await rpc('initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    });
    expect(init.result!.capabilities).toEqual({
      tools: { listChanged: true },
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    });
    const { result } = await rpc('tools/list');
    const tools = result!.tools as { name: string; execution?: unknown }[];
    expect(tools.map((t) => [t.name, t.execution ?? null])).toEqual([
      ['send_note', { taskSupport: 'optional' }],
      ['refuse_note', { taskSupport: 'optional' }],
      ['count_notes', null],
      ['get_approval_status', null],
    ]);
  });

  it('creates the task; tasks/get follows it; tasks/result waits for the single run and answers its result', async () => {
    const created = await rpc('tools/call', {
      name: 'send_note',
      arguments: { text: 'legacy' },
      task: { ttl: 60_000 },
    });
    const task = created.result!.task as Record<string, unknown>;
    const id = task.taskId as string;
    const approval = (await getApproval(db.sql, id))!;
    expect(created.result).toEqual({
      task: {
        taskId: id,
        status: 'working',
        statusMessage: `Waiting for a person to approve send_note (approval ${id}); nothing has been done yet. Undecided, it lapses at ${approval.expiresAt.toISOString()}.`,
        createdAt: approval.requestedAt.toISOString(),
        lastUpdatedAt: approval.requestedAt.toISOString(),
        ttl: null,
        pollInterval: 5000,
      },
      _meta: {
        'io.modelcontextprotocol/model-immediate-response': `Nothing has been done yet: a person must approve this send_note request first (approval ${id}, lapsing undecided at ${approval.expiresAt.toISOString()}). Its result arrives with task ${id}.`,
      },
    });
    expect((await rpc('tasks/get', { taskId: id })).result).toMatchObject({ taskId: id, status: 'working' });

    const waiting = rpc('tasks/result', { taskId: id });
    await sleep(300);
    await ana.decide(id, 'approve');
    await execute();
    const result = await waiting;
    expect(result.result).toEqual({
      content: [{ type: 'text', text: expect.stringContaining('N-6') }],
      structuredContent: { sent: true, text: 'legacy', number: 'N-6' },
      _meta: { 'io.modelcontextprotocol/related-task': { taskId: id } },
    });
    const got = (await rpc('tasks/get', { taskId: id })).result!;
    expect(got).toMatchObject({
      status: 'completed',
      statusMessage: 'Approved by console:ana and carried out.',
    });
    expect(got).not.toHaveProperty('result');
    expect(got.createdAt).toMatch(ISO);
  });

  it('a failed run is failed on this wire, and tasks/result answers the tool error', async () => {
    const created = await rpc('tools/call', { name: 'refuse_note', arguments: { text: 'y' }, task: {} });
    const id = (created.result!.task as { taskId: string }).taskId;
    await ana.decide(id, 'approve');
    await execute();
    expect((await rpc('tasks/get', { taskId: id })).result).toMatchObject({ status: 'failed' });
    expect((await rpc('tasks/result', { taskId: id })).result).toEqual({
      content: [{ type: 'text', text: 'note "y" cannot be sent — the mailbox is closed' }],
      isError: true,
      _meta: { 'io.modelcontextprotocol/related-task': { taskId: id } },
    });
  });

  it('tasks/cancel withdraws and answers the cancelled task; a final one is refused -32602', async () => {
    const created = await rpc('tools/call', {
      name: 'send_note',
      arguments: { text: 'take back' },
      task: {},
    });
    const id = (created.result!.task as { taskId: string }).taskId;
    const cancelled = await rpc('tasks/cancel', { taskId: id });
    expect(cancelled.result).toMatchObject({
      taskId: id,
      status: 'cancelled',
      statusMessage: 'Withdrawn by the client before anyone decided; nothing was done and it will never run.',
    });
    expect((await rpc('tasks/result', { taskId: id })).result).toMatchObject({ isError: true });
    expect((await rpc('tasks/cancel', { taskId: id })).error).toEqual({
      code: -32602,
      message: `Cannot cancel task ${id}: already in terminal status 'cancelled'.`,
    });
    const decided = await rpc('tools/call', { name: 'send_note', arguments: { text: 'approved' }, task: {} });
    const decidedId = (decided.result!.task as { taskId: string }).taskId;
    await ana.decide(decidedId, 'approve');
    expect((await rpc('tasks/cancel', { taskId: decidedId })).error).toEqual({
      code: -32602,
      message: `Cannot cancel task ${decidedId}: console:ana approved it and it runs now, exactly once; its result follows.`,
    });
    await execute();
  });

  it('tasks/list shows only the calling token’s tasks, newest first, a page of 20 at a time', async () => {
    const lister = await issueTestToken(db.sql, def, { label: 'lister' });
    const ids: string[] = [];
    for (let i = 0; i < 22; i++) {
      const created = await rpc(
        'tools/call',
        { name: 'send_note', arguments: { text: `n${i}` }, task: {} },
        lister,
      );
      ids.push((created.result!.task as { taskId: string }).taskId);
    }
    const first = (await rpc('tasks/list', {}, lister)).result!;
    const page = first.tasks as { taskId: string }[];
    expect(page.map((t) => t.taskId)).toEqual(ids.slice(2).reverse());
    expect(typeof first.nextCursor).toBe('string');
    const second = (await rpc('tasks/list', { cursor: first.nextCursor }, lister)).result!;
    expect((second.tasks as { taskId: string }[]).map((t) => t.taskId)).toEqual(ids.slice(0, 2).reverse());
    expect(second).not.toHaveProperty('nextCursor');
    // Another token's cursor is no cursor here; a new token has no tasks.
    expect((await rpc('tasks/list', { cursor: first.nextCursor }, stranger)).error).toMatchObject({
      code: -32602,
    });
    const fresh = await issueTestToken(db.sql, def, { label: 'fresh' });
    expect((await rpc('tasks/list', {}, fresh)).result).toEqual({ tasks: [] });
  });

  it('tasks/update is not part of this revision', async () => {
    expect(
      (await rpc('tasks/update', { taskId: 'ap_aaaaaaaaaaaa', inputResponses: {} })).error,
    ).toMatchObject({
      code: -32601,
    });
  });
});

describe('open tasks/result waits are capped per token and per process', () => {
  it('past a cap, tasks/result is answered at once with -32000 saying to poll tasks/get; audited', async () => {
    const capped = await startTestServer(def, { db, taskResultWaits: { perToken: 2, total: 3 } });
    const third = await issueTestToken(db.sql, def, { label: 'A third client' });
    const at = (bearer: string, method: string, params: Record<string, unknown>) =>
      rawRequest(capped.url, bearer, method, params);
    const created = await at(token, 'tools/call', {
      name: 'send_note',
      arguments: { text: 'wait for me' },
      task: { ttl: 60_000 },
    });
    const id = (created.result!.task as { taskId: string }).taskId;
    const other = await at(stranger, 'tools/call', {
      name: 'send_note',
      arguments: { text: 'me too' },
      task: { ttl: 60_000 },
    });
    const otherId = (other.result!.task as { taskId: string }).taskId;
    const held = new AbortController();
    const open = (bearer: string, taskId: string) =>
      rawRequest(capped.url, bearer, 'tasks/result', { taskId }, undefined, held.signal).catch(
        () => undefined,
      );
    try {
      // Three waits of one token: two are held, one is refused at once (whichever arrives last).
      const refusedForToken = await Promise.race([open(token, id), open(token, id), open(token, id)]);
      expect(refusedForToken?.error).toEqual({
        code: -32000,
        message: `Task ${id} is still working, and this token already holds 2 open tasks/result requests. Poll tasks/get for its status (every few seconds) and ask tasks/result once it is completed, failed or cancelled.`,
        data: { taskId: id, retryWith: 'tasks/get' },
      });
      // Another token fills the process's third place; a fourth wait from anyone is refused.
      const refusedForProcess = await Promise.race([open(stranger, otherId), open(stranger, otherId)]);
      expect(refusedForProcess?.error?.message).toContain(
        'this server already holds 3 open tasks/result requests',
      );
      const refusedThird = await at(third, 'tasks/result', { taskId: id });
      // Not its task: the cap on waits is never reached, the lookup answers first.
      expect(refusedThird.error?.code).toBe(-32602);
      // tasks/get still answers while the caps are full.
      expect((await at(token, 'tasks/get', { taskId: id })).result).toMatchObject({ status: 'working' });
    } finally {
      held.abort();
    }
    const refusals = await db.sql<{ summary: Record<string, unknown> }[]>`
      select result_summary as summary from audit_events
      where server = ${def.name} and method = 'tasks/result' and outcome = 'rate_limited' order by seq`;
    expect(refusals.map((r) => [r.summary.reason, r.summary.full])).toEqual([
      ['result_waits', 'token'],
      ['result_waits', 'process'],
    ]);
    // Once the held requests are gone their places are free again: a wait is taken and held.
    const again = new AbortController();
    let taken = false;
    for (let i = 0; i < 50 && !taken; i++) {
      const probe = rawRequest(
        capped.url,
        token,
        'tasks/result',
        { taskId: id },
        undefined,
        again.signal,
      ).catch(() => undefined);
      taken = (await Promise.race([probe, sleep(200).then(() => 'held' as const)])) === 'held';
    }
    again.abort();
    expect(taken).toBe(true);
    await capped.close();
  });
});

describe('every task request is audited like a tool call', () => {
  it('one event per request, with the method, token, client, task id, outcome and task status', async () => {
    const client = await connectTaskClient(server.url, token, 'audit-probe');
    const { taskId } = (await client.callToolAsTask('send_note', { text: 'audited' })) as { taskId: string };
    const before = await db.sql<
      { n: number }[]
    >`select count(*)::int as n from audit_events where server = ${def.name}`;
    await client.task('tasks/get', { taskId });
    await client.task('tasks/update', { taskId, inputResponses: {} });
    await client.task('tasks/get', { taskId: 'ap_zzzzzzzzzzzz' }).catch(() => {});
    await client.task('tasks/cancel', { taskId });
    await client.close();
    const rows = await db.sql<
      {
        method: string;
        outcome: string;
        tool: string | null;
        arguments: unknown;
        client_name: string;
        token_label: string;
        summary: unknown;
        approval_id: string | null;
      }[]
    >`
      select method, outcome, tool, arguments, client_name, token_label, result_summary as summary, approval_id
      from audit_events where server = ${def.name} order by seq offset ${before[0]!.n}`;
    expect(rows).toEqual([
      {
        method: 'tasks/get',
        outcome: 'ok',
        tool: 'send_note',
        arguments: { taskId },
        client_name: 'audit-probe',
        token_label: 'Claude on Ana’s laptop',
        summary: { task_status: 'working', approval_status: 'pending' },
        approval_id: null,
      },
      {
        method: 'tasks/update',
        outcome: 'ok',
        tool: 'send_note',
        arguments: { taskId },
        client_name: 'audit-probe',
        token_label: 'Claude on Ana’s laptop',
        summary: { task_status: 'working', approval_status: 'pending', input_responses_ignored: 0 },
        approval_id: null,
      },
      {
        method: 'tasks/get',
        outcome: 'invalid_arguments',
        tool: null,
        arguments: { taskId: 'ap_zzzzzzzzzzzz' },
        client_name: 'audit-probe',
        token_label: 'Claude on Ana’s laptop',
        summary: { reason: 'unknown_task', task_id: 'ap_zzzzzzzzzzzz' },
        approval_id: null,
      },
      {
        method: 'tasks/cancel',
        outcome: 'withdrawn',
        tool: 'send_note',
        arguments: { taskId },
        client_name: 'audit-probe',
        token_label: 'Claude on Ana’s laptop',
        summary: { task_status: 'cancelled', approval_status: 'withdrawn', withdrawn: true },
        approval_id: taskId,
      },
    ]);
  });

  it('odd params are answered -32602 naming what is wrong, and audited; nothing else happens', async () => {
    const before = await db.sql<
      { n: number }[]
    >`select count(*)::int as n from audit_events where server = ${def.name}`;
    const cases: [string, Record<string, unknown>, string][] = [
      [
        'tasks/get',
        {},
        'tasks/get needs params.taskId: the task id string a task-augmented tools/call returned.',
      ],
      [
        'tasks/get',
        { taskId: 42 },
        'tasks/get needs params.taskId: the task id string a task-augmented tools/call returned.',
      ],
      [
        'tasks/cancel',
        { taskId: 'x'.repeat(101) },
        'tasks/cancel needs params.taskId: the task id string a task-augmented tools/call returned.',
      ],
      [
        'tasks/get',
        { taskId: "ap_'; drop table" },
        "Task ap_'; drop table not found: no task of this token on task-test has that id.",
      ],
      ['tasks/list', { cursor: 7 }, 'tasks/list: cursor is a string.'],
      ['tasks/list', { cursor: '!!!' }, 'tasks/list: the cursor is not one this server gave.'],
      [
        'tasks/result',
        { taskId: null },
        'tasks/result needs params.taskId: the task id string a task-augmented tools/call returned.',
      ],
    ];
    for (const [method, params, message] of cases)
      expect((await rawRequest(server.url, token, method, params)).error).toEqual({ code: -32602, message });
    const rows = await db.sql<{ method: string; outcome: string }[]>`
      select method, outcome from audit_events where server = ${def.name} order by seq offset ${before[0]!.n}`;
    expect(rows).toEqual(cases.map(([method]) => ({ method, outcome: 'invalid_arguments' })));
  });

  it('a mismatched Mcp-Name is refused by the transport (-32020), and audited as a bad request', async () => {
    const before = await db.sql<
      { n: number }[]
    >`select count(*)::int as n from audit_events where server = ${def.name}`;
    const answer = await rawRequest(
      server.url,
      token,
      'tasks/get',
      {
        taskId: 'ap_aaaaaaaaaaaa',
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {
            extensions: { 'io.modelcontextprotocol/tasks': {} },
          },
        },
      },
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tasks/get', 'mcp-name': 'ap_bbbbbbbbbbbb' },
    );
    expect(answer.status).toBe(400);
    expect(answer.error).toMatchObject({ code: -32020 });
    const rows = await db.sql`
      select method, outcome from audit_events where server = ${def.name} order by seq offset ${before[0]!.n}`;
    expect(rows).toEqual([{ method: 'tasks/get', outcome: 'bad_request' }]);
  });

  it('a server without gated tools runs no tasks: nothing declared, every task method -32601, audited', async () => {
    const ping = await issueTestToken(db.sql, plain, { label: 'pinger' });
    const init = await rawRequest(plainServer.url, ping, 'initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'raw', version: '1' },
    });
    expect(init.result!.capabilities).toEqual({ tools: { listChanged: true } });
    const client = await connectTaskClient(plainServer.url, ping);
    expect((await client.discover()).capabilities).toEqual({ tools: { listChanged: true } });
    await expect(client.task('tasks/get', { taskId: 'ap_aaaaaaaaaaaa' })).rejects.toMatchObject({
      code: -32601,
      message: 'Method not found: task-plain runs no tasks (it has no gated tool).',
    });
    await client.close();
    for (const method of ['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel'])
      expect(
        (await rawRequest(plainServer.url, ping, method, { taskId: 'ap_aaaaaaaaaaaa' })).error,
      ).toMatchObject({
        code: -32601,
      });
    const rows = await db.sql`
      select method, outcome, result_summary->>'reason' as reason from audit_events
      where server = ${plain.name} and method like 'tasks/%' order by seq`;
    expect(rows).toEqual(
      ['tasks/get', 'tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel'].map((method) => ({
        method,
        outcome: 'bad_request',
        reason: 'unsupported_method',
      })),
    );
  });
});
