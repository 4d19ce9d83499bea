import type { Tool } from '@modelcontextprotocol/client';
import type { Logger } from 'pino';
import {
  createMcpConnection,
  type McpConnection,
  type McpUpstreamConfig,
  type RestartPolicy,
} from './connection.ts';

/** The upstream MCP servers a server declares, each a supervised connection. */
export interface McpUpstreams {
  readonly byName: ReadonlyMap<string, McpConnection>;
  /** Connects every upstream (each lists its tools once connected). */
  start(): void;
  /** Where each upstream is (`up`, `connecting`, `down`), for `/readyz`. */
  states(): Record<string, string>;
  /** Calls `fn` with an upstream's whole tools/list whenever one arrives. */
  onTools(fn: (upstream: string, tools: Tool[]) => void): void;
  close(): Promise<void>;
}

/** The registry of declared upstream MCP servers; connects nothing until `start` or a first call. */
export function createMcpUpstreams(
  configs: readonly McpUpstreamConfig[],
  logger: Logger,
  restart?: RestartPolicy,
): McpUpstreams {
  const byName = new Map(configs.map((c) => [c.name, createMcpConnection(c, logger, restart)]));
  return {
    byName,
    start: () => byName.forEach((c) => c.start()),
    states: () => Object.fromEntries([...byName].map(([name, c]) => [name, c.state()])),
    onTools: (fn) => byName.forEach((c, name) => c.onTools((tools) => fn(name, tools))),
    close: async () => {
      await Promise.all([...byName.values()].map((c) => c.close()));
    },
  };
}
