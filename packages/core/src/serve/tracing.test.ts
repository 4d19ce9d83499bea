import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startApprovalExecutor } from '../approvals/executor.ts';
import { webhookDeliverer } from '../approvals/webhook.ts';
import { createServer, createUpstreams, defineTool, READ_ONLY, resolveUpstreams } from '../index.ts';
import {
  connectTaskClient,
  issueTestToken,
  startTestServer,
  testApprover,
  type TestApprover,
  type TestServer,
} from '../testing/index.ts';
import { createLogger } from '../pipeline/observability/logger.ts';
import { startTracing, type Tracing } from './tracing.ts';

/** A span as OTLP/HTTP JSON carries it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
  links?: { traceId: string; spanId: string }[];
}

/** An OTLP/HTTP receiver on 127.0.0.1: keeps every span of every export it is sent. */
async function startReceiver(): Promise<{
  url: string;
  spans: OtlpSpan[];
  paths: string[];
  close(): Promise<void>;
}> {
  const spans: OtlpSpan[] = [];
  const paths: string[] = [];
  const server: Server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    paths,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const attrs = (s: OtlpSpan): Record<string, unknown> =>
  Object.fromEntries((s.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]));

const write = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };

const def = createServer({
  name: 'trace-test',
  version: '1.0.0',
  description: 'A server whose calls are traced.',
  tools: [
    defineTool({
      name: 'count_notes',
      title: 'Count notes',
      description: 'Counts the notes that start with a prefix.',
      scope: 'notes:read',
      input: z.object({ prefix: z.string().max(50) }),
      annotations: READ_ONLY,
      handler: async ({ prefix }, ctx) => {
        const [row] = await ctx.sql<{ n: number }[]>`
          select count(*)::int as n from trace_notes where text like ${`${prefix}%`}`;
        return { count: row!.n };
      },
    }),
    defineTool({
      name: 'get_status',
      title: 'Get status',
      description: 'Reads the status page of the status system.',
      scope: 'notes:read',
      input: z.object({}),
      annotations: READ_ONLY,
      handler: async (_args, ctx) => {
        const res = await ctx.upstream('status').get('/status');
        ctx.logger.info({ status: res.status }, 'status read');
        return { status: res.status };
      },
    }),
    defineTool({
      name: 'add_note',
      title: 'Add note',
      description: 'Adds a note, after a person approves it.',
      scope: 'notes:write',
      input: z.object({ text: z.string().max(200) }),
      annotations: write,
      approval: { preview: ({ text }) => `Add the note "${text}".` },
      handler: async ({ text }, ctx) => {
        await ctx.sql`insert into trace_notes (text) values (${text})`;
        await ctx.outbox!.enqueue('note_added', { text });
        return { added: true };
      },
    }),
  ],
});

let db: TestDatabase;
let server: TestServer;
let token: string;
let ana: TestApprover;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let tracing: Tracing;

/** The server's log lines, as JSON. */
const logLines: Record<string, unknown>[] = [];
const logger = createLogger({
  level: 'info',
  destination: new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  }),
});

/** What the status system was sent: the trace context headers of each request. */
const upstreamSaw: (string | undefined)[] = [];
let upstream: Server;
let upstreamUrl: string;

beforeAll(async () => {
  upstream = createHttpServer((req, res) => {
    upstreamSaw.push(req.headers.traceparent as string | undefined);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"up":true}');
  });
  upstream.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => upstream.once('listening', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  receiver = await startReceiver();
  tracing = startTracing({ endpoint: receiver.url, serviceName: 'trace-test' });
  db = await createTestDatabase();
  await db.sql`create table trace_notes (text text not null)`;
  const upstreams = createUpstreams(
    resolveUpstreams(
      { status: { baseUrlEnv: 'STATUS_URL', title: 'the status system' } },
      { STATUS_URL: upstreamUrl },
    ),
  );
  server = await startTestServer(def, { db, upstreams, logger });
  await db.sql`grant select, insert on trace_notes to bulkhead_trace_test`;
  token = await issueTestToken(db.sql, def);
  ana = await testApprover(db, 'ana');
});
afterAll(async () => {
  await server?.close();
  await tracing?.shutdown();
  await receiver?.close();
  await new Promise((resolve) => upstream?.close(resolve));
  await db?.drop();
});

async function connect(headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client(
    { name: 'trace-client', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(server.url, {
      requestInit: { headers: { Authorization: `Bearer ${token}`, ...headers } },
    }),
  );
  return client;
}

const newIds = () => ({ traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex') });

/**
 * The spans of one trace, once every span ended so far is exported (`flush` resolves after the
 * receiver answered). Without `withTokenCheck`, a token check's span is left out: whether a call's
 * token is still cached (for under a second) depends on how fast the machine is.
 */
async function traceOf(traceId: string, withTokenCheck = false): Promise<OtlpSpan[]> {
  await tracing.flush();
  return receiver.spans.filter((s) => s.traceId === traceId && (withTokenCheck || s.name !== 'token check'));
}

/** A 2025-11-25 request, sessionless, as raw HTTP: the first request a token makes can be a traced one. */
async function rawCall(
  bearer: string,
  traceparent: string,
  body: Record<string, unknown>,
): Promise<Response> {
  return fetch(server.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${bearer}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      traceparent,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...body }),
  });
}

/** Each server span that links to the client's span `parent` (the server begins a trace of its own for each request). */
async function linkedTo(parent: { traceId: string; spanId: string }): Promise<OtlpSpan[]> {
  await tracing.flush();
  return receiver.spans.filter(
    (s) => s.kind === 2 && s.links?.some((l) => l.traceId === parent.traceId && l.spanId === parent.spanId),
  );
}

/** The server's own trace of the one request that named `parent`: its id and spans. */
async function servedTrace(
  parent: { traceId: string; spanId: string },
  withTokenCheck = false,
): Promise<{ traceId: string; spans: OtlpSpan[] }> {
  const roots = await linkedTo(parent);
  expect(roots).toHaveLength(1);
  const traceId = roots[0]!.traceId;
  return { traceId, spans: await traceOf(traceId, withTokenCheck) };
}

const links = (s: OtlpSpan) => s.links?.map((l) => [l.traceId, l.spanId]);

async function eventTrace(tool: string, outcome: string): Promise<(string | null)[]> {
  const rows = await db.sql<{ trace_id: string | null }[]>`
    select trace_id from audit_events where tool = ${tool} and outcome = ${outcome} order by seq`;
  return rows.map((r) => r.trace_id);
}

describe('traces', () => {
  it('follows a call through the handler, its statement and the audit append, in a trace of its own linked to the client’s traceparent (in _meta)', async () => {
    const client = await connect();
    const parent = newIds();
    const result = await client.callTool({
      name: 'count_notes',
      arguments: { prefix: 'secret customer text' },
      _meta: { traceparent: `00-${parent.traceId}-${parent.spanId}-01` },
    });
    await client.close();
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: JSON.stringify({ count: 0 }, null, 2) }]);

    const { traceId, spans } = await servedTrace(parent);
    // The server mints the trace its event is filed under; the client's is only a link.
    expect(traceId).not.toBe(parent.traceId);
    expect(receiver.paths[0]).toBe('POST /v1/traces application/json');
    expect(spans.map((s) => s.name).sort()).toEqual([
      'SELECT trace_notes',
      'audit append',
      'handler count_notes',
      'tools/call count_notes',
    ]);
    const root = spans.find((s) => s.kind === 2)!;
    expect(root.name).toBe('tools/call count_notes');
    expect([root.parentSpanId || undefined, links(root)]).toEqual([
      undefined,
      [[parent.traceId, parent.spanId]],
    ]);
    expect(attrs(root)).toEqual({
      'mcp.method.name': 'tools/call',
      'mcp.protocol.version': '2026-07-28',
      'gen_ai.tool.name': 'count_notes',
      'gen_ai.operation.name': 'execute_tool',
      'jsonrpc.request.id': expect.stringMatching(/^\d+$/) as unknown,
    });
    const children = (of: OtlpSpan) => spans.filter((s) => s.parentSpanId === of.spanId).map((s) => s.name);
    expect(children(root).sort()).toEqual(['audit append', 'handler count_notes']);
    const handler = spans.find((s) => s.name === 'handler count_notes')!;
    expect(children(handler)).toEqual(['SELECT trace_notes']);
    const statement = spans.find((s) => s.name === 'SELECT trace_notes')!;
    expect(statement.kind).toBe(3);
    expect(attrs(statement)).toEqual({
      'db.system.name': 'postgresql',
      'db.query.summary': 'SELECT trace_notes',
    });
    // Nothing the client sent, nor any value, is an attribute of any span.
    expect(JSON.stringify(spans)).not.toContain('secret customer text');
    expect(await eventTrace('count_notes', 'ok')).toEqual([traceId]);
  });

  it('takes the trace context from the HTTP headers when _meta carries none (tools/list too), and marks a refusal', async () => {
    const parent = newIds();
    const client = await connect({ traceparent: `00-${parent.traceId}-${parent.spanId}-01` });
    await client.listTools();
    const result = await client.callTool({ name: 'count_notes', arguments: { prefix: 7 } });
    await client.close();
    expect(result.isError).toBe(true);
    const served = await linkedTo(parent);
    expect(served.map((s) => [s.name, s.parentSpanId || undefined])).toEqual([
      ['tools/list', undefined],
      ['tools/call count_notes', undefined],
    ]);
    expect(served[0]!.traceId).not.toBe(served[1]!.traceId);
    const root = served[1]!;
    expect(attrs(root)['error.type']).toBe('invalid_arguments');
    expect(await eventTrace('count_notes', 'invalid_arguments')).toEqual([root.traceId]);
  });

  it('begins a request’s server span when it arrived, with a token check that went to the database as its child', async () => {
    // A token never used: its check cannot be cached.
    const fresh = await issueTestToken(db.sql, def, { label: 'fresh for tracing' });
    const parent = newIds();
    const res = await rawCall(fresh, `00-${parent.traceId}-${parent.spanId}-01`, {
      method: 'tools/call',
      params: { name: 'count_notes', arguments: { prefix: 'fresh' } },
    });
    expect(res.status).toBe(200);
    await res.text();
    const { spans } = await servedTrace(parent, true);
    const root = spans.find((s) => s.name === 'tools/call count_notes')!;
    expect([root.parentSpanId || undefined, links(root)]).toEqual([
      undefined,
      [[parent.traceId, parent.spanId]],
    ]);
    const check = spans.find((s) => s.name === 'token check')!;
    expect([check.parentSpanId, attrs(check)]).toEqual([root.spanId, { 'bulkhead.token.cache': 'miss' }]);
    const ns = (t: string) => BigInt(t);
    const times = (x: OtlpSpan) => x as unknown as { startTimeUnixNano: string; endTimeUnixNano: string };
    // The server span starts before the token check and ends after it; the check took time.
    expect(ns(times(root).startTimeUnixNano) <= ns(times(check).startTimeUnixNano)).toBe(true);
    expect(ns(times(check).endTimeUnixNano) > ns(times(check).startTimeUnixNano)).toBe(true);
    expect(ns(times(check).endTimeUnixNano) <= ns(times(root).endTimeUnixNano)).toBe(true);
  });

  it('gives a request refused before the MCP layer (401) a server span named by its route, which its audit event names', async () => {
    const parent = newIds();
    const res = await rawCall('bh_trace-test_not-a-real-token', `00-${parent.traceId}-${parent.spanId}-01`, {
      method: 'tools/list',
    });
    expect(res.status).toBe(401);
    const requestId = res.headers.get('x-request-id')!;
    const { traceId, spans } = await servedTrace(parent, true);
    expect(spans.map((s) => [s.name, s.kind, s.parentSpanId || undefined])).toEqual([
      ['audit append', 1, spans.find((s) => s.name === 'POST /mcp')?.spanId],
      ['POST /mcp', 2, undefined],
    ]);
    expect(attrs(spans.find((s) => s.name === 'POST /mcp')!)).toEqual({
      'http.request.method': 'POST',
      'http.route': '/mcp',
      'http.response.status_code': 401,
      'error.type': 'unauthorized',
    });
    const [event] = await db.sql<{ outcome: string; trace_id: string | null }[]>`
      select outcome, trace_id from audit_events where request_id = ${requestId}`;
    expect(event).toEqual({ outcome: 'unauthorized', trace_id: traceId });
  });

  it('traces the rate limit’s reconciliation with the database, off the request path, in traces of its own', async () => {
    const client = await connect();
    await client.callTool({ name: 'count_notes', arguments: { prefix: 'counted' } });
    await client.close();
    // The limiter sends its counts every second.
    await expect
      .poll(
        async () => {
          await tracing.flush();
          return receiver.spans.filter((s) => s.name === 'rate limit sync').length;
        },
        { timeout: 10_000, interval: 200 },
      )
      .toBeGreaterThan(0);
    const sync = receiver.spans.find((s) => s.name === 'rate limit sync')!;
    expect(sync.parentSpanId || undefined).toBeUndefined();
    expect(attrs(sync)['bulkhead.rate_limit.tokens']).toBeGreaterThan(0);
  });

  it('gives a task method its server span too', async () => {
    const client = await connectTaskClient(server.url, token);
    const task = await client.callToolAsTask('add_note', { text: 'as a task' });
    const parent = newIds();
    const got = await client.task('tasks/get', {
      taskId: task.taskId,
      _meta: { traceparent: `00-${parent.traceId}-${parent.spanId}-01` },
    });
    await client.close();
    expect(got.status).toBe('working');
    const { traceId, spans } = await servedTrace(parent);
    const root = spans.find((s) => s.kind === 2)!;
    expect([root.name, root.parentSpanId || undefined, attrs(root)['mcp.method.name']]).toEqual([
      'tasks/get',
      undefined,
      'tasks/get',
    ]);
    const [row] = await db.sql<{ trace_id: string }[]>`
      select trace_id from audit_events where method = 'tasks/get' order by seq desc limit 1`;
    expect(row!.trace_id).toBe(traceId);
  });

  it('samples its own trace whatever the client’s flag says, and names that trace in the audit event', async () => {
    const client = await connect();
    const parent = newIds();
    await client.callTool({
      name: 'count_notes',
      arguments: { prefix: 'unsampled' },
      _meta: { traceparent: `00-${parent.traceId}-${parent.spanId}-00` },
    });
    await client.close();
    expect(await traceOf(parent.traceId)).toEqual([]);
    const { traceId, spans } = await servedTrace(parent);
    expect(spans.find((s) => s.kind === 2)!.name).toBe('tools/call count_notes');
    const [row] = await db.sql<{ trace_id: string }[]>`
      select trace_id from audit_events where arguments->>'prefix' = 'unsampled'`;
    expect(row!.trace_id).toBe(traceId);
  });

  it('carries the trace to an upstream (a client span per request, its traceparent sent along) and into log lines', async () => {
    const client = await connect();
    const parent = newIds();
    const result = await client.callTool({
      name: 'get_status',
      arguments: {},
      _meta: { traceparent: `00-${parent.traceId}-${parent.spanId}-01` },
    });
    await client.close();
    expect(result.isError).toBeFalsy();
    const { traceId, spans } = await servedTrace(parent);
    const handler = spans.find((s) => s.name === 'handler get_status')!;
    const request = spans.find((s) => s.parentSpanId === handler.spanId)!;
    expect([request.name, request.kind]).toEqual(['GET', 3]);
    expect(attrs(request)).toEqual({
      'http.request.method': 'GET',
      'server.address': '127.0.0.1',
      'bulkhead.upstream.name': 'status',
      'http.response.status_code': 200,
    });
    expect(upstreamSaw).toEqual([`00-${traceId}-${request.spanId}-01`]);
    // The handler's log line names the trace and the handler's span.
    expect(logLines.filter((l) => l.msg === 'status read').map((l) => [l.traceId, l.spanId])).toEqual([
      [traceId, handler.spanId],
    ]);
  });

  it('links an approved action’s execution and its outbox delivery, each in a trace of its own, to the call that filed it', async () => {
    const executor = startApprovalExecutor(def, {
      sql: server.sql,
      logger: pino({ level: 'silent' }),
      sweepIntervalMs: 60_000,
      // Delivered to the test's HTTP server, which keeps the traceparent each request carries.
      deliverers: { note_added: webhookDeliverer(`${upstreamUrl}/hooks/notes`) },
    });
    await executor.ready;
    const client = await connect();
    const parent = newIds();
    const filed = await client.callTool({
      name: 'add_note',
      arguments: { text: 'hello' },
      _meta: { traceparent: `00-${parent.traceId}-${parent.spanId}-01` },
    });
    await client.close();
    const approvalId = (filed.structuredContent as { approval_id: string }).approval_id;
    await ana.decide(approvalId, 'approve');
    await executor.drain();
    await executor.stop();

    const { traceId: filedIn, spans: filing } = await servedTrace(parent);
    const handler = filing.find((s) => s.name === 'handler add_note')!;
    expect(handler.parentSpanId).toBe(filing.find((s) => s.name === 'tools/call add_note')!.spanId);
    const run = receiver.spans.find((s) => s.name === 'execute_approval add_note')!;
    expect(run.traceId).not.toBe(filedIn);
    expect(links(run)).toEqual([[filedIn, handler.spanId]]);
    expect(attrs(run)['bulkhead.approval.id']).toBe(approvalId);
    const inRun = (await traceOf(run.traceId)).map((s) => s.name).sort();
    expect(inRun).toEqual([
      'INSERT bulkhead_outbox',
      'INSERT trace_notes',
      'audit append',
      'execute_approval add_note',
    ]);
    // Its outbox delivery: a trace of its own again, linked to the same filing call.
    const delivery = receiver.spans.find((s) => s.name === 'deliver note_added')!;
    expect([delivery.kind, delivery.parentSpanId || undefined]).toEqual([4, undefined]);
    expect(links(delivery)).toEqual([[filedIn, handler.spanId]]);
    expect(upstreamSaw).toContain(`00-${delivery.traceId}-${delivery.spanId}-01`);
    expect(attrs(delivery)).toEqual({
      'bulkhead.outbox.kind': 'note_added',
      'bulkhead.outbox.attempt': 1,
      'bulkhead.approval.id': approvalId,
    });
    const story = await db.sql<{ outcome: string; trace_id: string | null }[]>`
      select outcome, trace_id from audit_events where approval_id = ${approvalId} and tool = 'add_note'
      order by seq`;
    expect(story.map((e) => [e.outcome, e.trace_id])).toEqual([
      ['pending_approval', filedIn],
      // The decision is the console's, which traces nothing.
      ['approved', null],
      ['executed', run.traceId],
    ]);
  });
});
