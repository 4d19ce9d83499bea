import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { lintServer } from '@bulkhead/core/operator';
import type * as Prettier from 'prettier';
import { group, parse, type Command } from '../command.ts';
import { serverReadme } from '../figures.ts';
import { CliError, UsageError } from '../io.ts';
import { ComposeShapeError, composeWithServer, k8sOverlay } from '../new-server/deployment.ts';
import { loadDraft } from '../new-server/draft.ts';
import { draftMcp, listMcpTools, mcpListing, mcpSource } from '../new-server/mcp.ts';
import { mcpTools, type McpDraft } from '../new-server/mcp-templates.ts';
import { listOperations, loadApiDocument, type ApiDocument } from '../new-server/openapi.ts';
import type { Drafted, ToolPlan } from '../new-server/openapi-tools.ts';
import { COMPOSE, MAX_NAME, OVERLAYS, planServer } from '../new-server/plan.ts';
import { EXAMPLE_TOOL, serverFiles, serverScopes, type NewServer } from '../new-server/templates.ts';
import { repoRoot } from '../root.ts';
import { defaultUrl } from '../servers.ts';

const help = `Usage: bulkhead new server <name> [--port <n>] [--customer-bound] [--upstream <name>=<base URL variable>] [--description <text>] [--json]
       bulkhead new server [<name>] --from-openapi <file or URL> [--json]
       bulkhead new server <name> --from-openapi <file or URL> --operation <operationId>... [options]
       bulkhead new server [<name>] --from-mcp <command or URL> [--header <Name>=<VARIABLE>] [--json]
       bulkhead new server <name> --from-mcp <command or URL> [--header <Name>=<VARIABLE>] --tool <upstream tool>... [options]

Scaffolds a new bounded MCP server in servers/<name>/ that passes typecheck, lint
and its tests at once, and adds the deployment entries this repository keeps:

  servers/<name>/package.json    the manifest, its one source of truth: port, scopes,
                                 customer binding and a probe call (bulkhead field)
  servers/<name>/src/            env.ts (port from the manifest), server.ts, main.ts,
                                 queries.ts, one example read tool (tools/count-weekdays.ts)
                                 with its test, server.test.ts (lint, budgets, scopes)
  servers/<name>/grants.sql      what its database role may do beyond the kit's grants
  servers/<name>/README.md       usage and the tools table with its measured figures
  ${COMPOSE}     its service, its login role in setup, its password secret
  ${OVERLAYS}/<name>/   its Kubernetes overlay (Deployment, Service, PDB,
                                 HPA, NetworkPolicies from infra/k8s/base)

Nothing else changes: pnpm start, the CLI, the database roles and the cross-server
tests find the server by its manifest. Then run pnpm install, as printed.

Arguments:
  <name>                 lower-case letters, digits and single hyphens, at most ${MAX_NAME}
                         characters, e.g. billing-reports; also the audience of its tokens
                         and its database role (bulkhead_<name with _>)

Options:
  --port <n>             its port (1024-65535), not another server's; default the
                         highest port of servers/ plus one
  --customer-bound       every token of it is bound to one customer (tokens issue
                         --customer); its tools take no customer id
  --upstream <name>=<base URL variable>
                         a system the server reaches, e.g. alerts=ALERTS_URL: its
                         manifest entry (bulkhead.upstreams; bearer token from
                         ALERTS_TOKEN), an example read tool that calls it through
                         ctx.upstream, its test against a local HTTP server, a
                         stand-in for the cross-server tests (src/testing/upstreams.ts),
                         and its deployment entries: the variable required in compose;
                         in the overlay a ConfigMap literal, the Secret
                         bulkhead-<name>-upstream-<upstream> and an egress rule to its port
  --description <text>   one line: what the server is for (package.json, server
                         description, README)
  --from-openapi <file or URL>
                         an OpenAPI 3.0/3.1 or Swagger 2.0 document (JSON or YAML; a
                         URL is fetched). Alone: lists its operations (operationId,
                         method, path, summary) and writes nothing
  --operation <operationId>
                         repeatable, with --from-openapi: one tool for each operation
                         chosen (never one per endpoint) instead of the example tool,
                         in src/tools/ with its test against a local stub of the
                         operation. Its input: path and query parameters and the
                         body's required fields, bounded; GET reads through
                         ctx.upstream, any other method is gated (a person approves,
                         then the request is queued in the outbox). The upstream:
                         --upstream's name and variable, else the document's title
                         (e.g. alertmanager-api=ALERTMANAGER_API_URL); its auth from
                         the document's security scheme; its base path from basePath
                         or servers[0]. What the author must still decide is printed
  --from-mcp <command or URL>
                         an MCP server nobody here wrote: a command and its arguments
                         (split at spaces, run over stdio) or a Streamable HTTP URL.
                         Lists its tools with their annotations, whether Bulkhead
                         would gate each (not marked read-only) and the tool linter's
                         findings, and writes nothing
  --tool <upstream tool> repeatable, with --from-mcp: serve this tool of the upstream,
                         as it names it, instead of the example tool. Each is pinned
                         in pins.json (name, title, description, input and output
                         schema, annotations as the upstream gave them, and a hash;
                         \`bulkhead pins update\` rewrites it), served under its
                         snake_case name, and tested in src/tools/ against the real
                         upstream. One the upstream does not mark read-only is gated
                         (scope <name>:write; a person approves each call), the others
                         read (<name>:read). The manifest's bulkhead.mcpUpstream names
                         the command and its arguments, or the URL and --header's
                         variable; never a credential
  --header <Name>=<VARIABLE>
                         with a --from-mcp URL: a header sent with the value of that
                         environment variable (e.g. Authorization=FILES_TOKEN); with
                         --tool, the manifest reads the header's value from it
  --json                 print { name, port, customer_bound, files } as JSON (and
                         tools, with --operation or --tool); with
                         --from-openapi alone, [{ operationId, method, path, summary }];
                         with --from-mcp, [{ name, title, description, annotations,
                         gated, findings }]

Examples:
  bulkhead new server billing-reports
  bulkhead new server alerts --from-openapi alertmanager.json
  bulkhead new server alerts --from-openapi alertmanager.json \\
    --operation getAlerts --operation getSilences --operation deleteSilence
  bulkhead new server --from-mcp "npx -y @modelcontextprotocol/server-everything"
  bulkhead new server everything-front \\
    --from-mcp "npx -y @modelcontextprotocol/server-everything" \\
    --tool echo --tool toggle-simulated-logging

Exit code: 0 created (or operations listed), 1 refused (folder or port taken, the
compose file not as expected, a document or upstream that cannot be read; nothing
is written then), 2 usage error (an unknown operationId or upstream tool among them).`;

/**
 * Builds the new server's definition from the files about to be written, in a scratch copy that
 * resolves the kit from the CLI's own dependencies (the new package is not installed yet), and
 * returns its files with the README's measured figures, exactly as `pnpm figures` writes them. A
 * server of its own tools must lint clean; one in front of an MCP server lists the findings on the
 * upstream's text in its server test, for its author to answer in pins.json.
 */
async function measuredFiles(server: NewServer): Promise<Record<string, string>> {
  let files = serverFiles(server);
  // From the repository, not from this file: the CLI also runs bundled (packages/cli/dist).
  const cli = join(repoRoot, 'packages', 'cli');
  const scratch = join(
    cli,
    'node_modules',
    '.cache',
    'bulkhead-new-server',
    `${server.name}-${randomBytes(4).toString('hex')}`,
  );
  try {
    const def = await loadDraft(files, scratch);
    const { findings } = lintServer(def);
    if (server.mcp) {
      server.mcp.findings = findings.map((f) => `${f.tool} ${f.rule} ${f.path}`);
      files = serverFiles(server);
    } else if (findings.length)
      throw new CliError(`the new server does not lint clean: ${findings.map((f) => f.message).join('; ')}`);
    return { ...files, 'README.md': serverReadme(def, files['README.md']!) };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Formats each file as `pnpm format` would (prettier from the workspace), so that `pnpm lint` passes. */
async function formatted(files: Map<string, string>): Promise<Map<string, string>> {
  let prettier: typeof Prettier;
  try {
    const require = createRequire(join(repoRoot, 'package.json'));
    const mod = (await import(pathToFileURL(require.resolve('prettier')).href)) as {
      default?: typeof Prettier;
    };
    prettier = mod.default ?? (mod as unknown as typeof Prettier);
  } catch {
    return files; // not installed: `pnpm format` after `pnpm install` does the same
  }
  const out = new Map<string, string>();
  for (const [path, text] of files) {
    const filepath = join(repoRoot, path);
    const info = await prettier.getFileInfo(filepath, { ignorePath: join(repoRoot, '.prettierignore') });
    const options = await prettier.resolveConfig(filepath);
    out.set(
      path,
      info.ignored || !info.inferredParser ? text : await prettier.format(text, { ...options, filepath }),
    );
  }
  return out;
}

/** The listing mode: one line an operation (operationId, METHOD path, summary), or the array as JSON. */
function listing(api: ApiDocument, io: { out(line: string): void }, json: boolean): void {
  const rows = listOperations(api);
  if (json) {
    io.out(JSON.stringify(rows));
    return;
  }
  io.out(
    `${api.title}: ${rows.length} operation${rows.length === 1 ? '' : 's'}. Choose with --operation <operationId> (repeatable).`,
  );
  const idWidth = Math.max(...rows.map((r) => r.operationId.length));
  const callWidth = Math.max(...rows.map((r) => r.method.length + 1 + r.path.length));
  for (const r of rows)
    io.out(
      `  ${r.operationId.padEnd(idWidth)}  ${`${r.method} ${r.path}`.padEnd(callWidth)}  ${r.summary}`.trimEnd(),
    );
}

/** What a draft leaves to its author, tool by tool. */
function stillToDecide(drafted: Drafted, server: NewServer, io: { out(line: string): void }): void {
  const { tools, probe } = drafted.openapi;
  io.out('');
  io.out('Still to decide (the tools are drafts):');
  io.out(`  Descriptions to sharpen for the model: ${tools.map((t) => t.name).join(', ')}.`);
  const perTool = (label: string, pick: (t: ToolPlan) => string[]) => {
    const rows = tools.filter((t) => pick(t).length);
    if (!rows.length) return;
    io.out(`  ${label}:`);
    for (const t of rows) io.out(`    ${t.name}: ${pick(t).join(', ')}`);
  };
  perTool('Fields not taken (optional body fields and the like; add those the tool needs)', (t) => t.dropped);
  perTool('Free-text arguments to check (bounds, or an enum where the values are known)', (t) => t.freeText);
  perTool(
    'Arguments the document does not describe (their descriptions are placeholders)',
    (t) => t.undescribed,
  );
  io.out(
    probe
      ? `  Probe: ${probe.tool} with no arguments (bulkhead.probe in package.json); change it if another read is cheaper.`
      : '  Probe: none of the chosen tools reads without arguments; add bulkhead.probe to package.json (a read tool and its arguments), test/manifests.test.ts requires one.',
  );
  const u = server.upstream!;
  io.out(
    `  Upstream ${u.name}: base URL from ${u.baseUrlEnv}, auth ${JSON.stringify(u.auth)}${drafted.authNote ? ` (${drafted.authNote})` : ''}.`,
  );
  if (tools.some((t) => t.gated))
    io.out('  Gated tools: check each approval preview says what a person needs to decide.');
}

/** The next steps for a server drafted from an OpenAPI document; `url` is where `pnpm start` serves it. */
function nextSteps(server: NewServer, dir: string, url: string, io: { out(line: string): void }): void {
  io.out('');
  io.out('Next:');
  io.out('  pnpm install                          link the new package (pnpm-lock.yaml gains it)');
  io.out(
    `${`  pnpm vitest run ${dir}`.padEnd(40)}its tests: lint, budgets, scopes, each tool against a stub`,
  );
  io.out(`  pnpm start                            serves it at ${url}`);
  io.out(
    `                                        (with ${server.upstream!.baseUrlEnv} set to the upstream's base URL)`,
  );
}

/** The server's own files under `dir`, and its entries in the compose file and the Kubernetes overlays (where they exist). */
async function newFiles(server: NewServer, dir: string, overlay: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const [path, text] of Object.entries(await measuredFiles(server))) files.set(`${dir}/${path}`, text);
  const composeFile = join(repoRoot, COMPOSE);
  if (existsSync(composeFile)) {
    try {
      files.set(COMPOSE, composeWithServer(readFileSync(composeFile, 'utf8'), server));
    } catch (err) {
      if (!(err instanceof ComposeShapeError)) throw err;
      throw new CliError(
        `${COMPOSE}: ${err.message}; nothing was written. Add the service by hand (as dev-knowledge's), or fix the file and run again`,
      );
    }
  }
  if (existsSync(join(repoRoot, OVERLAYS)))
    for (const [file, text] of Object.entries(k8sOverlay(server))) files.set(`${overlay}/${file}`, text);
  return files;
}

/** What was created, for a reader: the server's files, then the deployment entries. */
function created(server: NewServer, dir: string, written: string[], io: { out(line: string): void }): void {
  const shown = (path: string) => relative(repoRoot, join(repoRoot, path));
  const scopes = serverScopes(server);
  io.out(
    `Created ${dir}: port ${server.port}, scope${scopes.length > 1 ? 's' : ''} ${scopes.join(', ')}, ${server.customerBound ? 'customer-bound' : 'not customer-bound'}.`,
  );
  for (const path of written.filter((p) => p.startsWith(`${dir}/`))) io.out(`  ${shown(path)}`);
  const deployment = written.filter((p) => !p.startsWith(`${dir}/`));
  if (deployment.length) {
    io.out('Deployment entries:');
    for (const path of deployment) io.out(`  ${shown(path)}`);
  }
}

/** The next steps for a server made from the example tool; `url` is where `pnpm start` serves it. */
function exampleNextSteps(
  server: NewServer,
  dir: string,
  url: string,
  io: { out(line: string): void },
): void {
  const token = `pnpm bulkhead tokens issue --server ${server.name}${server.customerBound ? ' --customer C-1001' : ''} --label "<who>"`;
  io.out('');
  io.out('Next:');
  io.out('  pnpm install                          link the new package (pnpm-lock.yaml gains it)');
  io.out(
    `${`  pnpm vitest run ${dir}`.padEnd(40)}its tests: lint, budgets, scopes, ${EXAMPLE_TOOL} over HTTP`,
  );
  io.out(`  pnpm start                            serves it at ${url}`);
  io.out(`  ${token}`);
  io.out(
    `Then replace src/tools/count-weekdays.ts with the server's own tools (one a file, listed in src/tools/index.ts),`,
  );
  io.out(
    "grant their tables in grants.sql, keep the manifest's scopes and probe true (test/manifests.test.ts checks",
  );
  io.out(
    'them), and run pnpm figures after changing a tool. A new table is a migration in packages/db/migrations.',
  );
}

/** What a server in front of an MCP server leaves to its author, and the next steps. */
function mcpNextSteps(
  server: NewServer,
  draft: McpDraft,
  dir: string,
  url: string,
  io: { out(line: string): void },
): void {
  const tools = mcpTools(draft);
  io.out('');
  io.out(`Pinned in ${dir}/pins.json (review it as code; bulkhead pins update ${server.name} rewrites it):`);
  for (const t of tools)
    io.out(
      `  ${t.name}  ${t.gated ? 'gated, a person approves each call' : 'read'}  (the upstream's ${t.pin.name}, sha256 ${t.pin.sha256.slice(0, 12)})`,
    );
  io.out('');
  io.out('Still to decide:');
  if (draft.findings.length)
    io.out(
      `  The linter's ${draft.findings.length} finding${draft.findings.length === 1 ? '' : 's'} on the upstream's text (src/server.test.ts lists them): answer each with the tool's served.description in pins.json.`,
    );
  io.out(
    "  Each tool's test calls it with arguments made from its schema (src/tools/<tool>.test.ts): change them if the upstream refuses them.",
  );
  if (draft.upstream.header?.env)
    io.out(`  ${draft.upstream.header.env}: set it wherever the server runs, its tests too.`);
  io.out('');
  io.out('Next:');
  io.out('  pnpm install                          link the new package (pnpm-lock.yaml gains it)');
  io.out(
    `${`  pnpm vitest run ${dir}`.padEnd(40)}its tests: lint, budgets, scopes, each tool through the real upstream`,
  );
  io.out(`  pnpm start                            serves it at ${url}`);
}

const serverCommand: Command = {
  name: 'server',
  summary: 'scaffold a new bounded MCP server and its deployment entries',
  help,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(
      argv,
      {
        port: { type: 'string' },
        'customer-bound': { type: 'boolean', default: false },
        upstream: { type: 'string' },
        description: { type: 'string' },
        'from-openapi': { type: 'string' },
        operation: { type: 'string', multiple: true },
        'from-mcp': { type: 'string' },
        header: { type: 'string' },
        tool: { type: 'string', multiple: true },
        json: { type: 'boolean', default: false },
      },
      true,
    );
    if (positionals.length > 1)
      throw new UsageError(`one name, not ${positionals.length}: ${positionals.join(' ')}`);
    const mcp = values['from-mcp'];
    const chosen = values.tool ?? [];
    if (chosen.length && mcp === undefined)
      throw new UsageError('--tool chooses from an MCP server: give it with --from-mcp <command or URL>');
    if (mcp !== undefined && !chosen.length) {
      // The listing mode: the upstream's tools, what Bulkhead would make of each; nothing is written.
      const rows = await listMcpTools(mcpSource(mcp, values.header, env.passthrough));
      io.out(values.json ? JSON.stringify(rows) : mcpListing(mcp, rows).join('\n'));
      return 0;
    }
    if (mcp !== undefined && (values['from-openapi'] !== undefined || values.upstream !== undefined))
      throw new UsageError(
        '--from-mcp takes neither --from-openapi nor --upstream: its upstream is the MCP server',
      );
    const source = values['from-openapi'];
    const operations = values.operation ?? [];
    if (operations.length && source === undefined)
      throw new UsageError(
        '--operation chooses from an OpenAPI document: give it with --from-openapi <file or URL>',
      );
    let api: ApiDocument | undefined;
    if (source !== undefined) {
      api = await loadApiDocument(source);
      if (!operations.length) {
        listing(api, io, values.json);
        return 0;
      }
    }
    let pinned: McpDraft | undefined;
    if (mcp !== undefined) {
      // Refused before the upstream is started: a name or folder that cannot be used.
      planServer(values, positionals[0], undefined, []);
      pinned = await draftMcp(mcp, values.header, env.passthrough, positionals[0]!, chosen);
    }
    const { server, drafted, dir, overlay } = planServer(values, positionals[0], api, operations, pinned);
    const files = await newFiles(server, dir, overlay);
    for (const [path, text] of await formatted(files)) {
      await mkdir(dirname(join(repoRoot, path)), { recursive: true });
      await writeFile(join(repoRoot, path), text);
    }

    const written = [...files.keys()];
    if (values.json) {
      io.out(
        JSON.stringify({
          name: server.name,
          port: server.port,
          customer_bound: server.customerBound,
          files: written,
          ...(drafted ? { tools: drafted.openapi.tools.map((t) => t.name) } : {}),
          ...(server.mcp ? { tools: mcpTools(server.mcp).map((t) => t.name) } : {}),
        }),
      );
      return 0;
    }
    created(server, dir, written, io);
    // Where `pnpm start` will serve it: the manifest port plus the offset a second stack runs with.
    const url = defaultUrl({ kind: 'mcp', port: server.port }, env.BULKHEAD_PORT_OFFSET);
    if (server.mcp) mcpNextSteps(server, server.mcp, dir, url, io);
    else if (drafted) {
      stillToDecide(drafted, server, io);
      nextSteps(server, dir, url, io);
    } else exampleNextSteps(server, dir, url, io);
    return 0;
  },
};

/** `bulkhead new`: scaffolds. */
export const newCommand: Command = group('new', 'scaffold a new bounded server', [serverCommand]);
