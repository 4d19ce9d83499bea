import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  listSwitchedOffTools,
  switchToolOff,
  switchToolOn,
  type SwitchedOffTool,
} from '@bulkhead/core/operator';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { table, when } from '../format.ts';
import { CliError, UsageError } from '../io.ts';
import { discoverServers, type ServerManifest } from '../servers.ts';

function mcpServer(name: string | undefined): ServerManifest {
  const servers = discoverServers().filter((s) => s.kind === 'mcp');
  const names = servers.map((s) => s.name).join(', ');
  if (!name) throw new UsageError(`--server is required; one of: ${names}`);
  const server = servers.find((s) => s.name === name);
  if (!server) throw new UsageError(`--server: unknown server "${name}"; one of: ${names}`);
  return server;
}

/**
 * The names of a server's tools, from its `src/tools/index.ts` (the list its server is built from),
 * loaded through tsx whether this CLI runs from source or from its bundle.
 */
async function toolNames(server: ServerManifest): Promise<string[]> {
  const { tsImport } = await import('tsx/esm/api');
  const file = join(server.dir, 'src', 'tools', 'index.ts');
  const module = (await tsImport(pathToFileURL(file).href, import.meta.url)) as { tools?: unknown };
  if (!Array.isArray(module.tools)) throw new CliError(`${file} exports no \`tools\` list`);
  return (module.tools as { name: string }[]).map((t) => t.name);
}

function requiredTool(tool: string | undefined, server: ServerManifest, known: string[]): string {
  if (!tool) throw new UsageError(`--tool is required; the tools of ${server.name}: ${known.join(', ')}`);
  return tool;
}

function json(tool: SwitchedOffTool) {
  return {
    server: tool.server,
    tool: tool.tool,
    reason: tool.reason,
    switched_by: tool.switchedBy,
    switched_at: tool.switchedAt.toISOString(),
  };
}

const off: Command = {
  name: 'off',
  summary: 'switch one tool of one server off, with a reason',
  help: `Usage: bulkhead tools off --server <name> --tool <tool> --reason <text>

Switches one tool of one server off for an incident. Within a second every
replica of that server leaves it out of tools/list, answers a call to it as to
an unknown tool (audited as unknown_tool), and tells the clients that listen
(notifications/tools/list_changed). The switch is audited (method tools/switch)
with the reason and BULKHEAD_OPERATOR as who switched. It stays off, across
restarts, until \`bulkhead tools on\`.

Options:
  --server <name>   the MCP server (an unknown name is answered with the list)
  --tool <tool>     one of its tools (an unknown name is answered with the list)
  --reason <text>   why, for the audit log and \`tools list\` (at most 500 characters)`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      server: { type: 'string' },
      tool: { type: 'string' },
      reason: { type: 'string' },
    });
    const server = mcpServer(values.server);
    const known = await toolNames(server);
    const tool = requiredTool(values.tool, server, known);
    if (!known.includes(tool))
      throw new UsageError(`--tool: ${server.name} has no tool "${tool}"; its tools: ${known.join(', ')}`);
    const reason = values.reason?.trim();
    if (!reason) throw new UsageError('--reason is required: say why the tool is switched off');
    if (reason.length > 500) throw new UsageError('--reason: at most 500 characters');
    return withDatabase(env, io, async ({ sql }) => {
      const done = await switchToolOff(sql, { server: server.name, tool, reason, operator: env.operator });
      if (!done) {
        const [was] = (await listSwitchedOffTools(sql, server.name)).filter((t) => t.tool === tool);
        throw new CliError(
          `${tool} of ${server.name} is already off (since ${when(was?.switchedAt)} UTC, by ${was?.switchedBy ?? '?'}: ${was?.reason ?? '?'})`,
        );
      }
      io.out(
        `Switched ${tool} of ${server.name} off: every replica leaves it out of tools/list and refuses calls to it within a second.`,
      );
      io.out(`Switch it on again with: bulkhead tools on --server ${server.name} --tool ${tool}`);
      return 0;
    });
  },
};

const on: Command = {
  name: 'on',
  summary: 'switch a switched-off tool on again',
  help: `Usage: bulkhead tools on --server <name> --tool <tool>

Switches a tool on again: within a second every replica of the server lists
and serves it, and the clients that listen are told. Audited (method
tools/switch) with BULKHEAD_OPERATOR as who switched.

Options:
  --server <name>   the MCP server (an unknown name is answered with the list)
  --tool <tool>     the switched-off tool (see \`bulkhead tools list\`)`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, { server: { type: 'string' }, tool: { type: 'string' } });
    const server = mcpServer(values.server);
    return withDatabase(env, io, async ({ sql }) => {
      const switched = (await listSwitchedOffTools(sql, server.name)).map((t) => t.tool);
      const offNow = `switched off on ${server.name}: ${switched.length ? switched.join(', ') : 'none'}`;
      const tool = values.tool;
      if (!tool) throw new UsageError(`--tool is required; ${offNow}`);
      // A tool switched off before its server dropped it may still be switched on; any other name is a mistake.
      if (!switched.includes(tool)) {
        const known = await toolNames(server);
        if (!known.includes(tool))
          throw new UsageError(
            `--tool: ${server.name} has no tool "${tool}"; its tools: ${known.join(', ')}`,
          );
      }
      const done = await switchToolOn(sql, { server: server.name, tool, operator: env.operator });
      if (!done) throw new CliError(`${tool} of ${server.name} is not switched off (${offNow})`);
      io.out(
        `Switched ${tool} of ${server.name} on again (it was off since ${when(done.switchedAt)} UTC, by ${done.switchedBy}: ${done.reason}).`,
      );
      return 0;
    });
  },
};

const list: Command = {
  name: 'list',
  summary: 'list the switched-off tools',
  help: `Usage: bulkhead tools list [--server <name>] [--json]

Lists the tools switched off, with who switched them off, when and why.

Options:
  --server <name>   only this server's
  --json            one JSON array of { server, tool, reason, switched_by, switched_at }`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      server: { type: 'string' },
      json: { type: 'boolean', default: false },
    });
    if (values.server) mcpServer(values.server);
    return withDatabase(env, io, async ({ sql }) => {
      const rows = await listSwitchedOffTools(sql, values.server);
      if (values.json) {
        io.out(JSON.stringify(rows.map(json)));
        return 0;
      }
      if (!rows.length) {
        io.out('No tool is switched off.');
        return 0;
      }
      io.out(
        table(
          ['SERVER', 'TOOL', 'OFF SINCE', 'BY', 'REASON'],
          rows.map((t) => [t.server, t.tool, when(t.switchedAt), t.switchedBy, t.reason]),
        ),
      );
      return 0;
    });
  },
};

export const toolsCommand = group('tools', 'Switch a tool of a server off for an incident, and on again.', [
  off,
  on,
  list,
]);
