import { Server } from '@modelcontextprotocol/server';
import type { Access } from './access.ts';
import { callTool, type CallKit } from './call-tool.ts';
import type { ServerDefinition } from './create-server.ts';

const CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';

/**
 * Builds the MCP server instance for one request (HTTP) or one connection
 * (stdio). Cheap by design: listings and schemas come precomputed from the
 * catalog; only two handlers are attached. `access` is either resolved (HTTP
 * checks the token before) or resolved again for every request (stdio, where
 * one connection outlives a revocation).
 */
export function buildMcpServer(
  def: ServerDefinition,
  kit: CallKit,
  access: Access | (() => Promise<Access>),
  requestId: () => string,
): Server {
  const who = () => (typeof access === 'function' ? access() : Promise.resolve(access));
  const server = new Server(
    {
      name: def.name,
      version: def.version,
      title: def.title,
      description: def.description,
      ...(def.icons ? { icons: def.icons } : {}),
    },
    { capabilities: { tools: { listChanged: false } } },
  );
  server.setRequestHandler('tools/list', async () => ({ tools: def.catalog.visible((await who()).scopes) }));
  server.setRequestHandler('tools/call', async (request, ctx) => {
    const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
    const info = (envelope?.[CLIENT_INFO] ?? server.getClientVersion()) as
      { name?: string; version?: string } | undefined;
    const result = await callTool(kit, {
      name: request.params.name,
      arguments: request.params.arguments,
      access: await who(),
      requestId: requestId(),
      clientName: info?.name ?? null,
      clientVersion: info?.version ?? null,
      signal: ctx.mcpReq.signal,
    });
    const listing = def.catalog.listings.get(request.params.name);
    return server.projectCallToolResult(result, listing?.outputSchema);
  });
  return server;
}
