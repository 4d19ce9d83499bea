import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/client';
import pino from 'pino';
import { createMcpConnection, type McpUpstreamConfig } from '../pipeline/mcp-upstream/connection.ts';
import { pinTool, type PinnedTool } from '../pipeline/mcp-upstream/pins.ts';
import { pinnedTool } from '../pipeline/mcp-upstream/pinned-tool.ts';
import type { AnyTool } from '../pipeline/tool-definition/define-tool.ts';

const require = createRequire(import.meta.url);

/** The entry file of an npm MCP server the tests run (`server-everything`, `server-filesystem`, `server-memory`). */
export function npmServerEntry(name: 'server-everything' | 'server-filesystem' | 'server-memory'): string {
  return join(dirname(require.resolve(`@modelcontextprotocol/${name}/package.json`)), 'dist', 'index.js');
}

/** An upstream run over stdio by this Node: `node <entry> ...args`. */
export function stdioUpstream(
  name: string,
  entry: string,
  args: string[],
  env?: Record<string, string>,
): McpUpstreamConfig {
  return {
    name,
    title: `the ${name} server`,
    transport: { type: 'stdio', command: process.execPath, args: [entry, ...args], ...(env ? { env } : {}) },
    secrets: [],
  };
}

/** Pins of the upstream's tools named `names`, as it lists them now (what `bulkhead pins update` writes). */
export async function livePins(config: McpUpstreamConfig, names: readonly string[]): Promise<PinnedTool[]> {
  const connection = createMcpConnection(config, pino({ level: 'silent' }));
  try {
    const client: Client = await connection.client(10_000);
    const { tools } = await client.listTools();
    return names.map((n) => {
      const tool = tools.find((t) => t.name === n);
      if (!tool) throw new Error(`${config.name} lists no tool ${n}`);
      return pinTool(tool as unknown as Record<string, unknown>);
    });
  } finally {
    await connection.close();
  }
}

/** Kit tools of `pins`, served with the scopes `<upstream>:read` and `<upstream>:write`. */
export function pinnedTools(
  upstream: string,
  pins: readonly PinnedTool[],
  timeouts: Record<string, number> = {},
): AnyTool[] {
  return pins.map((pin) =>
    pinnedTool(pin, {
      upstream,
      readScope: `${upstream}:read`,
      writeScope: `${upstream}:write`,
      ...(timeouts[pin.name] ? { timeoutMs: timeouts[pin.name] } : {}),
    }),
  );
}

/** The SDK-written upstream of the rug-pull tests (fixtures/rug-pull-upstream.ts), whose description `control` changes. */
export function rugPullUpstream(control: string): McpUpstreamConfig {
  return {
    name: 'forecasts',
    title: 'the forecast server',
    transport: {
      type: 'stdio',
      command: process.execPath,
      args: [
        '--import',
        'tsx',
        fileURLToPath(new URL('./fixtures/rug-pull-upstream.ts', import.meta.url)),
        control,
      ],
      cwd: fileURLToPath(new URL('../../../../', import.meta.url)),
    },
    secrets: [],
  };
}
