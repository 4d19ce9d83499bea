import type { Server as HttpServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { AddressInfo } from 'node:net';
import { createSql, groupRole, type Sql } from '@bulkhead/db';
import { manifestSchema } from '@bulkhead/deployables';
import type { TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import type { ServerDefinition } from '../pipeline/tool-definition/server-definition.ts';
import { createHttpApp, type HttpAppOptions } from '../serve/http-app.ts';
import { lintServer } from '../pipeline/tool-definition/lint/lint-tools.ts';
import { issueToken } from '../serve/tokens.ts';
import { createAuditWriter } from '@bulkhead/audit';
import { decideApproval } from '../approvals/decide.ts';
import type { ApprovalRecord } from '../approvals/store.ts';
import { TASKS_EXTENSION } from '../tasks/task-state.ts';
import { z } from 'zod';
import { defineTool } from '../pipeline/tool-definition/define-tool.ts';
import { createServer } from '../serve/create-server.ts';

/**
 * A server of one read-only tool, `add_numbers` (a + b, with its sum as structured output): for tests of
 * the transport, the HTTP layer and what the audit log keeps of a sitting, where the tool is beside the point.
 */
export function addNumbersServer(name: string, description: string): ServerDefinition {
  return createServer({
    name,
    version: '1.0.0',
    description,
    tools: [
      defineTool({
        name: 'add_numbers',
        title: 'Add numbers',
        description: 'Adds a and b.',
        scope: 'math:read',
        input: z.object({ a: z.number(), b: z.number() }),
        output: z.object({ sum: z.number() }),
        annotations: {
          readOnlyHint: true,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: false,
        },
        handler: async ({ a, b }) => ({ sum: a + b }),
      }),
    ],
  });
}

/** A server listening on a random loopback port, for tests that use a real client over real HTTP. */
export interface TestServer {
  url: URL;
  /** The pool the server runs on: its own deployable role's. */
  sql: Sql;
  close(): Promise<void>;
}

/**
 * Serves `def` on 127.0.0.1 with a random port, the way it runs in production: under its own
 * deployable role (`db.as(def.name)`; a fixture server's name gets a role with the kit's grants).
 * Logs are discarded unless `logger` is given.
 */
export async function startTestServer(
  def: ServerDefinition,
  options: Partial<Omit<HttpAppOptions, 'sql'>> & { db: TestDatabase; sql?: Sql; port?: number },
): Promise<TestServer> {
  const { db, port: fixedPort = 0, ...rest } = options;
  const own = options.sql ? undefined : await db.as(def.name);
  const sql = options.sql ?? own!.sql;
  // As deployed: read-only calls on a read-only pool of their own (unless the test brings its pool).
  const reads = own ? createSql(own.url, { max: 4, readOnly: true }) : undefined;
  const http = createHttpApp(def, {
    logger: pino({ level: 'silent' }),
    publicUrl: 'http://127.0.0.1',
    ...(reads ? { reads } : {}),
    ...rest,
    sql,
  });
  const server = serve({ fetch: http.app.fetch, port: fixedPort, hostname: '127.0.0.1' });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    sql,
    close: async () => {
      http.endStreams();
      const closed = new Promise((resolve) => server.close(resolve));
      // A stream a client still holds open (a proxy's upstream socket, a GET stream) would keep the
      // server from closing: cut what is left after a moment.
      const cut = setTimeout(() => (server as HttpServer).closeAllConnections(), 1_000);
      await closed;
      clearTimeout(cut);
      await http.close();
      await reads?.end({ timeout: 1 });
    },
  };
}

/** Issues a token with every scope of `def` (or `scopes`) for a test. */
export async function issueTestToken(
  sql: Sql,
  def: ServerDefinition,
  options: {
    scopes?: string[];
    customerId?: string | null;
    label?: string;
    expiresAt?: Date | null;
    owner?: string | null;
  } = {},
): Promise<string> {
  const { token } = await issueToken(sql, {
    server: def.name,
    label: options.label ?? 'test client',
    scopes: options.scopes ?? [...def.catalog.scopes],
    customerId: options.customerId ?? null,
    expiresAt: options.expiresAt === undefined ? new Date(Date.now() + 3600_000) : options.expiresAt,
    createdBy: 'test',
    owner: options.owner ?? null,
  });
  return token;
}

/** Connects a real 2026-07-28 MCP client to `url` with `token` as its bearer token. */
export async function connectTestClient(url: URL, token: string, name = 'bulkhead-test'): Promise<Client> {
  const client = new Client(
    { name, version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

/**
 * A real 2026-07-28 MCP client (the SDK's) that declares the tasks extension, so that a gated call
 * answers a task. SDK 2.4's client has no tasks API yet and refuses a `resultType: "task"` answer;
 * `callToolAsTask` hands that answer to the caller instead, and everything else — envelope, the
 * `Mcp-Method`/`Mcp-Name` headers, transport, `tasks/get` and `tasks/cancel` through `request` —
 * is the SDK's own.
 */
export class TaskClient extends Client {
  #created = new Map<number, Record<string, unknown>>();

  protected override _onresponse(response: Parameters<Client['_onresponse']>[0]): void {
    const result = (response as { result?: Record<string, unknown> }).result;
    if (result?.resultType === 'task' && typeof response.id === 'number') {
      this.#created.set(response.id, result);
      // The SDK resolves the call with an empty result; callToolAsTask picks up the task.
      super._onresponse({ ...response, result: { resultType: 'complete', content: [] } });
      return;
    }
    super._onresponse(response);
  }

  /** Calls a tool; a task answer comes back as it was sent (`resultType: "task"`, `taskId`, …). */
  async callToolAsTask(name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const before = new Set(this.#created.keys());
    const result = await this.callTool({ name, arguments: args });
    for (const [id, task] of this.#created)
      if (!before.has(id)) {
        this.#created.delete(id);
        return task;
      }
    return result as Record<string, unknown>;
  }

  /** A task method (`tasks/get`, `tasks/cancel`, `tasks/update`), its result unchecked. */
  task(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.request({ method, params }, z.looseObject({})) as Promise<Record<string, unknown>>;
  }
}

/** Connects a {@link TaskClient} (2026-07-28, tasks extension declared) to `url` with `token`. */
export async function connectTaskClient(
  url: URL,
  token: string,
  name = 'bulkhead-task-test',
): Promise<TaskClient> {
  const client = new TaskClient(
    { name, version: '1.0.0' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      capabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    },
  );
  await client.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

/** A JSON-RPC answer read off the wire, with the notifications that came before it. */
export interface RawAnswer {
  status: number;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
  notifications: { method: string; params: Record<string, unknown> }[];
}

/** POSTs `body` as JSON to an MCP endpoint with `bearer`, as a client of protocol `version` does: the raw answer. */
export function postMcp(
  url: string | URL,
  bearer: string,
  body: unknown,
  version = '2025-03-26',
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${bearer}`,
      'mcp-protocol-version': version,
    },
    body: JSON.stringify(body),
  });
}

/**
 * Sends requests to a Hono app's `/mcp` as a client holding `token` does, with the method and the raw
 * body as given: for tests of what the HTTP layer answers to what no SDK client would send.
 */
export function mcpSender(
  app: { request(url: string, init: RequestInit): Response | Promise<Response> },
  token: string,
): (method: string, body?: string, version?: string) => Promise<Response> {
  return async (method, body, version = '2025-11-25') =>
    app.request('http://127.0.0.1/mcp', {
      method,
      headers: {
        host: '127.0.0.1',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': version,
      },
      ...(body === undefined ? {} : { body }),
    });
}

let rawIds = 0;

/**
 * Sends one JSON-RPC request as a raw 2025-11-25 (stateless) client does, byte for byte, and reads
 * the answer whether it comes as JSON or as an event stream.
 */
export async function rawRequest(
  url: URL,
  token: string,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string> = { 'mcp-protocol-version': '2025-11-25' },
  signal?: AbortSignal,
): Promise<RawAnswer> {
  const response = await fetch(url, {
    method: 'POST',
    ...(signal ? { signal } : {}),
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++rawIds, method, params }),
  });
  const text = await response.text();
  const messages = (response.headers.get('content-type') ?? '').includes('text/event-stream')
    ? text
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>)
    : text
      ? [JSON.parse(text) as Record<string, unknown>]
      : [];
  const answer = messages.find((m) => 'id' in m) ?? {};
  return {
    status: response.status,
    ...(answer.result !== undefined ? { result: answer.result as Record<string, unknown> } : {}),
    ...(answer.error !== undefined ? { error: answer.error as RawAnswer['error'] & object } : {}),
    notifications: messages.filter((m) => !('id' in m)) as RawAnswer['notifications'],
  };
}

/** A tool result as tests read it. */
export interface FlatResult {
  isError: boolean;
  text: string;
  structured: Record<string, unknown> | undefined;
}

/** Calls a tool and flattens the result to `{ isError, text, structured }`. */
export async function callFlat(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<FlatResult> {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as { type: string; text?: string }[];
  return {
    isError: result.isError === true,
    text: content.map((c) => c.text ?? '').join('\n'),
    structured: result.structuredContent as Record<string, unknown> | undefined,
  };
}

/** What a server shows the model, as its own test checks it. */
export interface ServerSurface {
  /** Linter findings on its tools/list (none for a shipped server). */
  findings: ReturnType<typeof lintServer>['findings'];
  chars: number;
  /** The part of the listing a model reads (name, title, description, input schema). */
  modelChars: number;
  /** The budgets the linter checked against (undefined would mean it checked none). */
  budgetChars: number | undefined;
  modelBudgetChars: number | undefined;
  /** The `bulkhead.scopes` of its package.json, and the scopes its tools actually need. */
  declaredScopes: string[];
  toolScopes: string[];
}

/** Lints a server definition and reads its package.json manifest, so each server's test is three assertions. */
export function serverSurface(def: ServerDefinition, packageJson: URL): ServerSurface {
  const lint = lintServer(def);
  const pkg = JSON.parse(readFileSync(packageJson, 'utf8')) as { bulkhead?: unknown };
  return {
    findings: lint.findings,
    chars: lint.size.chars,
    modelChars: lint.size.modelChars,
    budgetChars: lint.budgetChars,
    modelBudgetChars: lint.modelBudgetChars,
    declaredScopes: pkg.bulkhead === undefined ? [] : manifestSchema.parse(pkg.bulkhead).scopes,
    toolScopes: [...def.catalog.scopes],
  };
}

export { chromiumLaunchOptions, SYSTEM_CHROMIUM, type ChromiumLaunch } from './browser.ts';

/** An approver for tests: a person with an approver token, deciding under the console's role as the console does. */
export interface TestApprover {
  token: string;
  approver: { tokenId: string; label: string; owner: string | null };
  decide(
    id: string,
    decision: 'approve' | 'reject',
    options?: { reason?: string; expectedHash?: string; allowSelfApproval?: boolean },
  ): Promise<ApprovalRecord>;
}

/** Issues an approver token to `person` and decides with it through the console's own database role. */
export async function testApprover(
  db: TestDatabase,
  person = 'approver@example.test',
): Promise<TestApprover> {
  const { token, record } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: person,
    scopes: ['approvals:decide'],
    expiresAt: null,
    createdBy: 'test',
    owner: person,
  });
  const { sql } = await db.as('console');
  const audit = createAuditWriter(sql);
  const approver = { tokenId: record.id, label: record.label, owner: person };
  return {
    token,
    approver,
    // Self-approval is the owner's to allow: such a decision goes the CLI's way, as the owner under the
    // console's role, with BULKHEAD_ALLOW_SELF_APPROVAL.
    decide: (id, decision, { allowSelfApproval, ...options } = {}) =>
      allowSelfApproval
        ? decideApproval(db.sql, createAuditWriter(db.sql), {
            id,
            decision,
            via: 'console',
            proof: token,
            allowSelfApproval,
            asRole: groupRole('console'),
            ...options,
          })
        : decideApproval(sql, audit, { id, decision, via: 'console', proof: token, ...options }),
  };
}
export { livePins, npmServerEntry, pinnedTools, rugPullUpstream, stdioUpstream } from './mcp-upstreams.ts';
