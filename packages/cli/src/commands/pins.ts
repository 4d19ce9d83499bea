import { writeFileSync } from 'node:fs';
import { acceptMcpDrift, listMcpDrift, type McpDriftRecord } from '@bulkhead/core/operator';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { table, when } from '../format.ts';
import { CliError, UsageError } from '../io.ts';
import {
  formatPinFile,
  listUpstream,
  lintUpstream,
  readPinFile,
  serverWithUpstream,
  updatedPins,
  upstreamOf,
} from '../mcp-upstream.ts';

const update: Command = {
  name: 'update',
  summary: "rewrite a server's pin file from what its upstream MCP server lists now",
  help: `Usage: bulkhead pins update <server> [--tool <upstream tool>...]

Connects to the upstream MCP server that <server> declares (bulkhead.mcpUpstream
in its package.json, credentials from the environment or files it names) and
rewrites its pin file (pins.json) with each pinned tool's definition and sha256
as the upstream gives it now, and the names of its other tools. An author's
served.description is kept. Prints what changed and the tool linter's findings
on the new definitions, for the code review that follows; a running server keeps
withholding a drifted tool until the new pins are deployed or an operator
accepts the drift (\`bulkhead pins accept\`).

<server> is a server's name (a folder of servers/) or the path to its folder.

Options:
  --tool <upstream tool>   repeatable: pin this tool of the upstream as well (a
                           pins.json of {"upstream": "<name>", "tools": []} starts one)`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(argv, { tool: { type: 'string', multiple: true } }, true);
    const server = serverWithUpstream(positionals[0], env.cwd);
    const { config, pinsPath } = upstreamOf(server, env.passthrough);
    const current = readPinFile(pinsPath);
    const live = await listUpstream(config);
    const result = updatedPins(current, live, values.tool ?? []);
    writeFileSync(pinsPath, formatPinFile(result.file));
    for (const c of result.changed)
      io.out(
        c.from === 'none'
          ? `pinned: ${c.tool} (sha256 ${c.to.slice(0, 12)})`
          : `changed: ${c.tool} (sha256 ${c.from.slice(0, 12)} → ${c.to.slice(0, 12)})`,
      );
    for (const m of result.missing)
      io.out(`missing: ${m} is no longer listed by ${config.title}; its pin is kept`);
    for (const a of result.added) io.out(`new: ${a} (not served; pin it with --tool)`);
    const pinned = new Set(result.file.tools.map((t) => t.name));
    const findings = lintUpstream(result.file.tools as never).filter(
      (f) => f.tool === null || pinned.has(f.tool),
    );
    for (const f of findings) io.out(`lint ${f.tool ?? '*'}: ${f.rule} (${f.path}): ${f.message}`);
    io.out(
      result.changed.length || result.added.length
        ? `Wrote ${pinsPath}: review the diff before it is deployed.`
        : `${pinsPath} already pins what ${config.title} lists; nothing changed.`,
    );
    return 0;
  },
};

function driftJson(d: McpDriftRecord) {
  return {
    server: d.server,
    upstream: d.upstream,
    tool: d.tool,
    kind: d.kind,
    sha256: d.sha256,
    pinned: d.pinned,
    live: d.live,
    findings: d.findings,
    blocked: d.blocked,
    seen_at: d.seenAt.toISOString(),
    accepted_by: d.acceptedBy,
    accepted_at: d.acceptedAt?.toISOString() ?? null,
  };
}

const drift: Command = {
  name: 'drift',
  summary: 'list the tools whose upstream definition drifted from their pins',
  help: `Usage: bulkhead pins drift [--server <name>] [--json]

Every drift a server recorded: a pinned tool whose upstream definition changed
(withheld until accepted) or a tool the upstream lists that was not pinned, with
its sha256, whether the tool linter blocks it, and who accepted it.`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, { server: { type: 'string' }, json: { type: 'boolean' } });
    return withDatabase(env, io, async ({ sql }) => {
      const rows = await listMcpDrift(sql, values.server);
      if (values.json) {
        io.out(JSON.stringify(rows.map(driftJson), null, 2));
        return 0;
      }
      if (!rows.length) {
        io.out('No drift recorded.');
        return 0;
      }
      io.out(
        table(
          ['server', 'upstream', 'tool', 'kind', 'sha256', 'state', 'seen'],
          rows.map((d) => [
            d.server,
            d.upstream,
            d.tool,
            d.kind,
            d.sha256.slice(0, 12),
            d.acceptedBy ? `accepted by ${d.acceptedBy}` : d.blocked ? `blocked: ${d.blocked}` : 'withheld',
            when(d.seenAt),
          ]),
        ),
      );
      return 0;
    });
  },
};

const accept: Command = {
  name: 'accept',
  summary: 'accept a drifted tool definition for this deployment',
  help: `Usage: bulkhead pins accept --server <name> --tool <upstream tool> --sha256 <hash>

Accepts the drifted definition with that sha256 (see \`bulkhead pins drift\`)
for this deployment: every replica of the server serves the tool again, with
the new text, within a second. Audited (method tools/accept_drift) with
BULKHEAD_OPERATOR as who accepted. Refused for a definition the tool linter
blocked (hidden characters, HTML, URLs, orders to the model) and for a new tool
(pin it with \`bulkhead pins update\` and review it).`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      server: { type: 'string' },
      tool: { type: 'string' },
      sha256: { type: 'string' },
    });
    const { server, tool, sha256 } = values;
    if (!server || !tool || !sha256) throw new UsageError('--server, --tool and --sha256 are required');
    return withDatabase(env, io, async ({ sql }) => {
      const found = (await listMcpDrift(sql, server)).find(
        (d) => d.tool === tool && d.sha256.startsWith(sha256),
      );
      if (!found)
        throw new CliError(`no drift of ${tool} on ${server} with sha256 ${sha256}; see bulkhead pins drift`);
      if (found.blocked)
        throw new CliError(`the new definition of ${tool} cannot be accepted: ${found.blocked}`);
      const done = await acceptMcpDrift(sql, {
        server,
        upstream: found.upstream,
        tool,
        sha256: found.sha256,
        operator: env.operator,
      });
      io.out(
        done
          ? `Accepted the new definition of ${tool} on ${server}: every replica serves it within a second.`
          : `The new definition of ${tool} on ${server} was accepted already; nothing changed.`,
      );
      return 0;
    });
  },
};

export const pinsCommand: Command = group(
  'pins',
  'Keep the pinned tool definitions of an upstream MCP server: update, drift, accept.',
  [update, drift, accept],
);
