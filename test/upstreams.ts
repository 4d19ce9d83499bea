import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createLogger,
  createMcpUpstreams,
  createUpstreams,
  resolveMcpUpstream,
  resolveUpstreams,
  type McpUpstreams,
  type Upstreams,
} from '@bulkhead/core';
import type { McpServerManifest } from './servers.ts';

/** The systems a server reaches, as its tests start them: the variables naming them, and the kit's clients. */
export interface TestUpstreams {
  /** The server's upstream variables (`BULKHEAD_OPS_ALERTMANAGER_URL`, …), for a server started as a process. */
  env: Record<string, string>;
  /** For a server started in this process (`startTestServer(def, { db, upstreams })`); undefined without upstreams. */
  upstreams: Upstreams | undefined;
  /** The MCP server it stands in front of (`bulkhead.mcpUpstream`), started or reached as its manifest says; undefined without one. */
  mcpUpstreams: McpUpstreams | undefined;
  close(): Promise<void>;
}

/** What a server with upstreams exports from `src/testing/upstreams.ts`: real instances, or local stand-ins. */
interface ServerTestUpstreams {
  startTestUpstreams(): Promise<{ env: Record<string, string>; close(): Promise<void> }>;
}

/**
 * Starts what `server` reaches (its manifest's `bulkhead.upstreams`) for the cross-server tests, through
 * the server's own `src/testing/upstreams.ts`, so that nothing here names a server. A server without
 * upstreams needs nothing.
 */
export async function startTestUpstreams(server: McpServerManifest): Promise<TestUpstreams> {
  const mcpUpstreams = testMcpUpstreams(server);
  if (server.upstreams.length === 0)
    return { env: {}, upstreams: undefined, mcpUpstreams, close: async () => await mcpUpstreams?.close() };
  const file = join(server.dir, 'src', 'testing', 'upstreams.ts');
  const module = (await import(pathToFileURL(file).href).catch((err: Error) => {
    throw new Error(
      `servers/${server.name} reaches ${server.upstreams.map((u) => u.name).join(', ')}: its src/testing/upstreams.ts ` +
        `must export startTestUpstreams() for the cross-server tests (${err.message})`,
    );
  })) as ServerTestUpstreams;
  const started = await module.startTestUpstreams();
  const { UPSTREAMS } = (await import(pathToFileURL(join(server.dir, 'src', 'env.ts')).href)) as {
    UPSTREAMS: unknown;
  };
  const upstreams = createUpstreams(resolveUpstreams(UPSTREAMS, started.env));
  return {
    env: started.env,
    upstreams,
    mcpUpstreams,
    close: async () => {
      await mcpUpstreams?.close();
      await upstreams.close();
      await started.close();
    },
  };
}

/**
 * The MCP server `server` stands in front of, as its manifest declares it (a command run from its folder,
 * or a URL with its header's value from this process's environment); undefined without one.
 */
function testMcpUpstreams(server: McpServerManifest): McpUpstreams | undefined {
  const config = resolveMcpUpstream(server.manifest.mcpUpstream, process.env, server.dir);
  return config ? createMcpUpstreams([config], createLogger({ level: 'silent' })) : undefined;
}
