// The files `bulkhead new server --from-openapi` writes instead of the example tool: one tool a chosen
// operation, its test against a local stub of that operation, and the two helpers they share.

import { quoted } from '@bulkhead/core';
import type { ToolArg, ToolPlan } from './openapi-tools.ts';
import { ts } from './openapi-tools.ts';

/** What the drafted tools need to know of their server and upstream. */
export interface OpenApiServer {
  /** The server's name and its definition's export (`alerts`, `alertsServer`). */
  name: string;
  serverExport: string;
  customerBound: boolean;
  upstream: string;
  /** `the Alertmanager API`. */
  upstreamTitle: string;
  tools: ToolPlan[];
}

const capital = (text: string) => text[0]!.toUpperCase() + text.slice(1);

/** Text inside a template literal: backticks, backslashes and `${` kept as text. */
const tpl = (text: string) => text.replaceAll('\\', '\\\\').replaceAll('`', '\\`').replaceAll('${', '\\${');

/** A value as TypeScript source (JSON, whose quotes prettier turns into the repository's). */
const literal = (value: unknown) => JSON.stringify(value, null, 2);

const isJsonArg = (a: ToolArg) => /^z\.(array|strictObject|record)\(/.test(a.zod);
/** Free text the model writes: quoted in a preview, so that it cannot read as the sentence's own words. */
const isTextArg = (a: ToolArg) => /^z\.string\(/.test(a.zod);

/** `{ wire: name, ... }`, written `{ name }` where both are the same. */
function objectOf(args: ToolArg[], value: (a: ToolArg) => string = (a) => a.name): string {
  return `{ ${args.map((a) => (a.wire === a.name && value(a) === a.name ? a.name : `${/^[A-Za-z_$][\w$]*$/.test(a.wire) ? a.wire : ts(a.wire)}: ${value(a)}`)).join(', ')} }`;
}

/** `, { params, query }`: a GET's request options, when it has any. */
function options(params: string | undefined, query: string | undefined): string {
  const parts = [...(params ? [`params: ${params}`] : []), ...(query ? [`query: ${query}`] : [])];
  return parts.length ? `, { ${parts.join(', ')} }` : '';
}

/** The query arguments as the client's `query` (a list repeats its key, a CSV one is joined), if any. */
function queryOf(t: ToolPlan): string | undefined {
  const query = t.args.filter((a) => a.in === 'query');
  if (!query.length) return undefined;
  return objectOf(query, (a) => (a.csv ? `${a.name}${a.required ? '' : '?'}.join(',')` : a.name));
}

function paramsOf(t: ToolPlan): string | undefined {
  const path = t.args.filter((a) => a.in === 'path');
  if (!path.length) return undefined;
  return objectOf(path, (a) => (/^z\.(string|number|enum)/.test(a.zod) ? a.name : `String(${a.name})`));
}

function jsonOf(t: ToolPlan): string | undefined {
  if (t.body === 'none') return undefined;
  if (t.body === 'whole') return 'body';
  return objectOf(t.args.filter((a) => a.in === 'body'));
}

/** The sentence a person approves: the operation, where it goes, and every argument. */
function previewCode(t: ToolPlan, upstreamTitle: string): string {
  const shown = t.args.map((a) => {
    const value =
      isJsonArg(a) || isTextArg(a)
        ? a.required
          ? `\${${isTextArg(a) ? 'quoted' : 'JSON.stringify'}(${a.name})}`
          : `\${${a.name} === undefined ? 'not given' : ${isTextArg(a) ? 'quoted' : 'JSON.stringify'}(${a.name})}`
        : a.required
          ? `\${${a.name}}`
          : `\${${a.name} ?? 'not given'}`;
    return `${tpl(a.name)} ${value}`;
  });
  const head = tpl(`${t.title} on ${upstreamTitle} (${t.method} ${t.path})`);
  return `\`${head}${shown.length ? `: ${shown.join(', ')}` : ''}.\``;
}

/** The preview of `args` as the tool's preview function writes it (for the test's expected value). */
export function previewText(t: ToolPlan, upstreamTitle: string, args: Record<string, unknown>): string {
  const shown = t.args.map((a) => {
    const v = args[a.name];
    const text =
      v === undefined
        ? 'not given'
        : isTextArg(a)
          ? quoted(String(v))
          : isJsonArg(a)
            ? JSON.stringify(v)
            : String(v);
    return `${a.name} ${text}`;
  });
  return `${t.title} on ${upstreamTitle} (${t.method} ${t.path})${shown.length ? `: ${shown.join(', ')}` : ''}.`;
}

const destructure = (t: ToolPlan) =>
  t.args.length ? `{ ${t.args.map((a) => a.name).join(', ')} }` : '_args';

// A tool's icon in the drafted file: an arrow out for an operation that changes the upstream, a page for a read.
const GATED_ICON = `"<path d='M1 8l14-6-4 13-3-5z'/>"`;
const READ_ICON = `"<path d='M3 1h10v14H3zm2 4h6v1H5zm0 3h6v1H5z' fill-rule='evenodd'/>"`;

/** One tool file. */
export function openApiToolTs(s: OpenApiServer, t: ToolPlan): string {
  const imports = t.gated
    ? [
        `import { defineTool, ${t.args.some(isTextArg) ? 'quoted, ' : ''}svgIcon, upstreamEffect } from '@bulkhead/core';`,
        `import { z } from 'zod';`,
      ]
    : [
        `import { defineTool, READ_ONLY, svgIcon, ToolError } from '@bulkhead/core';`,
        `import { z } from 'zod';`,
      ];
  if (!t.gated) imports.push(`import { untrustedData, upstreamData } from '../upstream-data.ts';`);
  const annotations = t.gated
    ? `{ readOnlyHint: false, destructiveHint: ${t.method === 'DELETE'}, idempotentHint: ${t.method === 'PUT' || t.method === 'DELETE'}, openWorldHint: true }`
    : '{ ...READ_ONLY, openWorldHint: true }';
  const input = t.args.length
    ? `z.strictObject({\n${t.args.map((a) => `    ${a.name}: ${a.zod},`).join('\n')}\n  })`
    : 'z.strictObject({})';
  const params = paramsOf(t);
  const json = jsonOf(t);
  const handler = t.gated
    ? `approval: { preview: (${destructure(t)}) => ${previewCode(t, s.upstreamTitle)} },
  handler: async (${destructure(t)}, ctx) => {
    // Runs once a person approved: the request is queued and sent after the commit, once.
    const id = await ctx.outbox!.enqueue(
      'upstream',
      upstreamEffect({
        upstream: ${ts(s.upstream)},
        method: ${ts(t.method)},
        path: ${ts(t.path)},${params ? `\n        params: ${params},` : ''}${queryOf(t) ? `\n        query: ${queryOf(t)},` : ''}${json ? `\n        json: ${json},` : ''}
      }),
    );
    return { outbox_id: id };
  },`
    : `handler: async (${destructure(t)}, ctx) => {
    const res = await ctx.upstream(${ts(s.upstream)}).get(${ts(t.path)}${options(params, queryOf(t))});
    if (!res.ok)
      throw new ToolError(
        \`${tpl(capital(s.upstreamTitle))} answered HTTP \${res.status} to ${tpl(`${t.method} ${t.path}`)}: check the arguments. Nothing was changed.\`,
      );
    return { http_status: res.status, data: untrustedData(res, ${ts(`${s.upstream} ${t.method} ${t.path}`)}) };
  },`;
  return `${imports.join('\n')}

// Drafted by \`bulkhead new server --from-openapi\` from ${t.operationId} (${t.method} ${t.path}). Sharpen the
// description for the model and check the arguments${t.body === 'fields' ? ': only the required body fields are taken' : ''}.

export const ${t.exportName} = defineTool({
  name: ${ts(t.name)},
  title: ${ts(t.title)},
  description: ${ts(t.description)},
  scope: ${ts(t.scope)},
  input: ${input},
  output: ${t.gated ? 'z.object({ outbox_id: z.number() })' : 'z.object({ http_status: z.number(), data: upstreamData })'},
  annotations: ${annotations},
  icons: svgIcon(${t.gated ? GATED_ICON : READ_ICON}),
  timeoutMs: 10_000,
  ${handler}
});
`;
}

/** The arguments a test calls the tool with: every one, optional ones too, with its example. */
export function exampleArgs(t: ToolPlan): Record<string, unknown> {
  return Object.fromEntries(t.args.map((a) => [a.name, a.example]));
}

/** The path and query the stub sees for `args`, as the kit's client writes the query. */
function sentUrl(t: ToolPlan, args: Record<string, unknown>): string {
  const search = new URLSearchParams();
  for (const a of t.args.filter((q) => q.in === 'query')) {
    const value = args[a.name];
    if (value === undefined) continue;
    const values = Array.isArray(value) ? (a.csv ? [value.join(',')] : value) : [value];
    for (const v of values) search.append(a.wire, String(v));
  }
  const query = search.toString();
  return `${concretePath(t, args)}${query ? `?${query}` : ''}`;
}

/** The path the stub sees for `args`: the placeholders filled, each encoded. */
function concretePath(t: ToolPlan, args: Record<string, unknown>): string {
  return t.path.replace(/\{([^}]+)\}/g, (_, wire: string) => {
    const arg = t.args.find((a) => a.in === 'path' && a.wire === wire);
    return encodeURIComponent(String(arg ? args[arg.name] : ''));
  });
}

/** The body the upstream gets for `args`. */
function sentBody(t: ToolPlan, args: Record<string, unknown>): unknown {
  if (t.body === 'whole') return args.body;
  if (t.body === 'none') return undefined;
  return Object.fromEntries(t.args.filter((a) => a.in === 'body').map((a) => [a.wire, args[a.name]]));
}

/** The test of one tool, against a local stub of its operation. */
export function openApiToolTestTs(s: OpenApiServer, t: ToolPlan): string {
  const args = exampleArgs(t);
  const path = concretePath(t, args);
  const url = sentUrl(t, args);
  const route = `{ method: ${ts(t.method)}, path: ${ts(path)}, status: ${t.response.status}, body: ANSWER }`;
  const head = `// ${t.operationId} (${t.method} ${t.path}), against a local stub of ${s.upstreamTitle}:
// a real HTTP server on 127.0.0.1 that answers this operation with an example built from the
// document's response schema.

const ARGS = ${literal(args)};
const ANSWER = ${literal(t.response.example)};

let h: Harness;
beforeAll(async () => {
  h = await startHarness(${route});
});
afterAll(async () => {
  await h.close();
});
`;
  if (!t.gated)
    return `import { callFlat } from '@bulkhead/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { marked, startHarness, type Harness } from '../test-client.ts';

${head}
describe('${t.name}', () => {
  it('returns the answer of ${tpl(s.upstreamTitle)}, its texts marked untrusted', async () => {
    const result = await callFlat(h.client, '${t.name}', ARGS);
    expect([result.isError, result.structured]).toEqual([
      false,
      { http_status: ${t.response.status}, data: marked(ANSWER, ${ts(`${s.upstream} ${t.method} ${t.path}`)}) },
    ]);
    expect(h.received.map((r) => [r.method, r.url])).toEqual([['GET', ${ts(url)}]]);
  });

  it('is audited: its arguments, its outcome and the request it sent', async () => {
    const [event] = await h.db.sql<{ arguments: unknown; outcome: string; result_summary: { upstream: unknown[] } }[]>\`
      select arguments, outcome, result_summary from audit_events where tool = '${t.name}' order by seq desc limit 1\`;
    expect([event!.arguments, event!.outcome]).toEqual([ARGS, 'ok']);
    expect(event!.result_summary.upstream).toEqual([
      {
        upstream: ${ts(s.upstream)},
        method: 'GET',
        path_template: ${ts(t.path)},
        path: ${ts(path)},
        attempt: 1,
        status: ${t.response.status},
        bytes: ${t.response.example === null ? 0 : 'Buffer.byteLength(JSON.stringify(ANSWER))'},
        ms: expect.any(Number),
      },
    ]);
  });
});
`;
  const body = sentBody(t, args);
  return `import { PENDING_NOTE } from '@bulkhead/core/operator';
import { callFlat, testApprover } from '@bulkhead/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../test-client.ts';

${head}
describe('${t.name}', () => {
  let approvalId = '';

  it('files a request for approval and sends nothing to ${tpl(s.upstreamTitle)} before a person approves', async () => {
    const result = await callFlat(h.client, '${t.name}', ARGS);
    approvalId = String(result.structured?.approval_id);
    expect([result.isError, result.structured]).toEqual([
      false,
      {
        status: 'pending_approval',
        approval_id: expect.stringMatching(/^ap_/),
        preview: {
          text: ${ts(previewText(t, s.upstreamTitle, args))},
          source: \`approval \${approvalId} preview\`,
          untrusted: true,
        },
        expires_at: expect.any(String),
        note: PENDING_NOTE,
      },
    ]);
    const [event] = await h.db.sql\`select outcome, approval_id from audit_events where tool = '${t.name}'\`;
    expect(event).toEqual({ outcome: 'pending_approval', approval_id: approvalId });
    expect(h.received).toEqual([]);
  });

  it('sends the request once a person approves, with a random idempotency key from the outbox', async () => {
    await (await testApprover(h.db)).decide(approvalId, 'approve');
    await h.executor.drain();
    expect(h.received).toEqual([
      {
        method: ${ts(t.method)},
        url: ${ts(url)},
        json: ${body === undefined ? 'undefined' : literal(body)},
        key: expect.stringMatching(/^bulkhead-outbox-[0-9a-f]{32}$/),
      },
    ]);
  });
});
`;
}

/** `src/upstream-data.ts`: the answer as the model gets it. */
export function upstreamDataTs(): string {
  return `import { untrusted, type UpstreamResponse } from '@bulkhead/core';
import { z } from 'zod';

/**
 * What a read tool answers as \`data\`: any JSON value (an object, a list, a text, a number, a boolean
 * or null), each kind its own branch so that every client can read the schema.
 */
export const upstreamData = z.union([z.looseObject({}), z.array(z.unknown()), z.string(), z.number(), z.boolean(), z.null()]);
export type UpstreamData = z.output<typeof upstreamData>;

/**
 * The answer's JSON with every string in it marked untrusted, naming \`source\` (the upstream and the
 * operation): data, never instructions. A body that is not JSON comes back as one untrusted text,
 * an empty one as null.
 */
export function untrustedData(res: UpstreamResponse, source: string): UpstreamData {
  const text = res.text().text;
  if (!text) return null;
  let value: unknown;
  try {
    value = res.json();
  } catch {
    return { ...untrusted(text, { source }) };
  }
  const mark = (v: unknown): unknown => {
    if (typeof v === 'string') return untrusted(v, { source });
    if (Array.isArray(v)) return v.map(mark);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, mark(item)]));
    return v;
  };
  // JSON in, JSON out: an object stays an object, a list a list (a text becomes an untrusted text object).
  return mark(value) as UpstreamData;
}
`;
}

/** `src/test-client.ts`: the server, a stub of its upstream, a client, and for gated tools the approval executor. */
export function testClientTs(s: OpenApiServer): string {
  const gated = s.tools.some((t) => t.gated);
  return `import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/client';
import { ${gated ? 'createLogger, ' : ''}createUpstreams, resolveUpstreams, untrusted } from '@bulkhead/core';
${gated ? "import { startApprovalExecutor, type ApprovalExecutor } from '@bulkhead/core/operator';\n" : ''}import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { UPSTREAMS } from './env.ts';
import { ${s.serverExport} } from './server.ts';

/** A request the stub received: its method, its path and query, its JSON body and idempotency key. */
export interface Received {
  method: string;
  url: string;
  json: unknown;
  key: string | undefined;
}

/** The one operation a stub answers (anything else is a 404). */
export interface StubRoute {
  method: string;
  /** As sent, placeholders filled; the query is not compared. */
  path: string;
  status: number;
  /** Sent as JSON; null sends an empty body. */
  body: unknown;
}

/** A fresh database, the server on a random port${gated ? ', its approval executor' : ''} and a client, its upstream a local stub. */
export interface Harness {
  db: TestDatabase;
  server: TestServer;
  client: Client;
  /** What reached the stub, in order. */
  received: Received[];${gated ? '\n  /** Runs approved requests and sends their effects; `drain()` waits until it has. */\n  executor: ApprovalExecutor;' : ''}
  close(): Promise<void>;
}

/** Starts the upstream's stub (a real HTTP server on 127.0.0.1), then the server reaching it. */
export async function startHarness(route: StubRoute): Promise<Harness> {
  const received: Received[] = [];
  const stub = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({
        method: req.method!,
        url: req.url!,
        json: body ? JSON.parse(body) : undefined,
        key: req.headers['idempotency-key'] as string | undefined,
      });
      if (req.method !== route.method || req.url!.split('?')[0] !== route.path) return res.writeHead(404).end();
      const answer = route.body === null ? '' : JSON.stringify(route.body);
      res.writeHead(route.status, { 'content-type': 'application/json' }).end(answer);
    });
  });
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  // What the upstream's manifest entry reads: its base URL is the stub's, each secret a placeholder.
  const env: Record<string, string> = {};
  for (const u of Object.values(UPSTREAMS)) {
    env[u.baseUrlEnv] = \`http://127.0.0.1:\${(stub.address() as AddressInfo).port}\`;
    for (const [key, value] of Object.entries(u.auth)) if (key.endsWith('Env')) env[value] = 'test-secret';
  }
  const upstreams = createUpstreams(resolveUpstreams(UPSTREAMS, env));
  const db = await createTestDatabase();
  const server = await startTestServer(${s.serverExport}, { db, upstreams });
  const token = await issueTestToken(db.sql, ${s.serverExport}${s.customerBound ? ", { customerId: 'C-1001' }" : ''});
  const client = await connectTestClient(server.url, token);${
    gated
      ? `
  const executor = startApprovalExecutor(${s.serverExport}, {
    sql: server.sql,
    logger: createLogger({ level: 'silent' }),
    upstreams,
  });
  await executor.ready;`
      : ''
  }
  return {
    db,
    server,
    client,
    received,${gated ? '\n    executor,' : ''}
    close: async () => {${gated ? '\n      await executor.stop();' : ''}
      await client.close();
      await server.close();
      await upstreams.close();
      stub.closeAllConnections();
      await new Promise((resolve) => stub.close(resolve));
      await db.drop();
    },
  };
}

/** What a read tool returns of an upstream's JSON: every string marked untrusted, naming \`source\`. */
export function marked(value: unknown, source: string): unknown {
  if (typeof value === 'string') return untrusted(value, { source });
  if (Array.isArray(value)) return value.map((v) => marked(v, source));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, marked(v, source)]));
  return value;
}
`;
}

/** \`src/tools/index.ts\` of the drafted tools. */
export function openApiToolsIndexTs(s: OpenApiServer): string {
  return `import type { AnyTool } from '@bulkhead/core';
${s.tools.map((t) => `import { ${t.exportName} } from './${t.file}.ts';`).join('\n')}

/** Every tool of ${s.name}, in the order tools/list shows them. */
export const tools: AnyTool[] = [${s.tools.map((t) => t.exportName).join(', ')}];
`;
}

/** Every file of the drafted tools, by path relative to the server's folder. */
export function openApiFiles(s: OpenApiServer): Record<string, string> {
  const files: Record<string, string> = {
    'src/upstream-data.ts': upstreamDataTs(),
    'src/test-client.ts': testClientTs(s),
    'src/tools/index.ts': openApiToolsIndexTs(s),
  };
  for (const t of s.tools) {
    files[`src/tools/${t.file}.ts`] = openApiToolTs(s, t);
    files[`src/tools/${t.file}.test.ts`] = openApiToolTestTs(s, t);
  }
  return files;
}
