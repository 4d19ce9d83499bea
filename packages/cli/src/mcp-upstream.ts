import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  createMcpConnection,
  createLogger,
  formatPinFile,
  parsePinFile,
  pinTool,
  resolveMcpUpstream,
  type McpUpstreamConfig,
  type PinFile,
  type PinnedTool,
} from '@bulkhead/core';
import { lintTools, type LintFinding } from '@bulkhead/core/operator';
import { readDeployable, type Deployable } from '@bulkhead/deployables';
import { CliError, UsageError } from './io.ts';
import { discoverServers } from './servers.ts';

/** The server `<server>` names: a folder under servers/ by name, or a path to a server's folder. */
export function serverWithUpstream(given: string | undefined, cwd: string): Deployable & { config: unknown } {
  if (!given) throw new UsageError('name the server (or the path to its folder)');
  const server = given.includes('/')
    ? readDeployable(resolve(cwd, given))
    : (discoverServers().find((s) => s.name === given) ?? null);
  if (!server) throw new UsageError(`no server "${given}"`);
  if (!server.manifest.mcpUpstream)
    throw new UsageError(`${server.name} declares no bulkhead.mcpUpstream in its package.json`);
  return { ...server, config: server.manifest.mcpUpstream };
}

/** The upstream's whole tools/list, each tool pinned as it is now, through a connection made for it alone. */
export async function listUpstream(config: McpUpstreamConfig): Promise<PinnedTool[]> {
  const connection = createMcpConnection(config, createLogger({ level: 'silent' }));
  try {
    const client = await connection.client(20_000).catch((err: unknown) => {
      throw new CliError(`could not reach ${config.title} (${(err as Error).message})`);
    });
    const { tools } = await client.listTools();
    return tools.map((t) => pinTool(t as unknown as Record<string, unknown>));
  } finally {
    await connection.close();
  }
}

/** The linter's findings on the upstream's tools, as a bounded server would list them. */
export function lintUpstream(tools: readonly PinnedTool[]): LintFinding[] {
  return lintTools(
    tools.map((t) => ({
      name: t.name,
      ...(t.title !== undefined ? { title: t.title } : {}),
      description: t.served?.description ?? t.description ?? '',
      inputSchema: t.inputSchema,
      annotations: t.annotations ?? {},
    })),
  ).findings;
}

/** A server's upstream resolved against the environment, with its folder's pin file path. */
export function upstreamOf(
  server: Deployable,
  env: Record<string, string | undefined>,
): { config: McpUpstreamConfig; pinsPath: string } {
  const spec = server.manifest.mcpUpstream!;
  const config = resolveMcpUpstream(spec, env, server.dir)!;
  return { config, pinsPath: join(server.dir, spec.pins ?? 'pins.json') };
}

/** The tools `--tool` names, in the order given (each once); a name the upstream does not list is refused with those it does. */
export function chosenTools(live: readonly PinnedTool[], names: readonly string[]): PinnedTool[] {
  const chosen: PinnedTool[] = [];
  for (const name of names) {
    const tool = live.find((t) => t.name === name);
    if (!tool)
      throw new UsageError(
        `--tool: the upstream lists no tool "${name}"; its tools: ${live.map((t) => t.name).join(', ')}`,
      );
    if (!chosen.includes(tool)) chosen.push(tool);
  }
  return chosen;
}

/** What `pins update` changed: tools whose pin was rewritten, and pinned tools the upstream no longer lists. */
export interface PinsUpdate {
  file: PinFile;
  changed: { tool: string; from: string; to: string }[];
  missing: string[];
  added: string[];
}

/**
 * The pin file rewritten from the upstream's live tools: each pinned tool's definition and hash as the
 * upstream gives it now (an author's `served` text kept for review), and the other tools it lists.
 */
export function updatedPins(
  current: PinFile,
  live: readonly PinnedTool[],
  add: readonly string[] = [],
): PinsUpdate {
  const byName = new Map(live.map((t) => [t.name, t]));
  chosenTools(live, add);
  const adding = add.filter((n) => !current.tools.some((t) => t.name === n));
  const changed: PinsUpdate['changed'] = [];
  const missing: string[] = [];
  const tools = current.tools.map((pin) => {
    const now = byName.get(pin.name);
    if (!now) {
      missing.push(pin.name);
      return pin;
    }
    if (now.sha256 !== pin.sha256) changed.push({ tool: pin.name, from: pin.sha256, to: now.sha256 });
    return { ...now, ...(pin.served ? { served: pin.served } : {}) };
  });
  for (const name of adding) {
    tools.push(byName.get(name)!);
    changed.push({ tool: name, from: 'none', to: byName.get(name)!.sha256 });
  }
  const pinned = new Set(tools.map((t) => t.name));
  const others = live.map((t) => t.name).filter((n) => !pinned.has(n));
  const added = others.filter((n) => !(current.others ?? []).includes(n));
  return { file: { upstream: current.upstream, tools, others }, changed, missing, added };
}

/** Reads a pin file, or explains that there is none. */
export function readPinFile(path: string): PinFile {
  if (!existsSync(path))
    throw new CliError(`${path}: no pin file (bulkhead new server --from-mcp writes one)`);
  return parsePinFile(readFileSync(path, 'utf8'), path);
}

export { formatPinFile };
