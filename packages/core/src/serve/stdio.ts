import { ProtocolError, ProtocolErrorCode, type Server } from '@modelcontextprotocol/server';
import { randomUUID } from 'node:crypto';
import { serveStdio as serveSdkStdio, type StdioServerHandle } from '@modelcontextprotocol/server/stdio';
import { createAuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { ApprovalRequester, CallKit } from '../pipeline/call/call-tool.ts';
import { createRequestAudit, type RequestAudit } from '../pipeline/observability/request-audit.ts';
import type { ApprovalRecord } from '../approvals/store.ts';
import { approvalsFor } from '../approvals/requester.ts';
import type { ServerDefinition } from '../pipeline/tool-definition/server-definition.ts';
import { buildMcpServer } from './mcp-server.ts';
import { createTokenVerifier } from './tokens.ts';
import { watchPolicy } from './policy-watch.ts';
import { createToolSwitches } from './tool-switches.ts';
import type { Upstreams } from '../pipeline/upstream/upstreams.ts';
import type { McpUpstreams } from '../pipeline/mcp-upstream/upstreams.ts';
import { createPinWatch, withWithheld, type PinWatch } from '../pipeline/mcp-upstream/pin-watch.ts';
import { withUrlsShown } from '../pipeline/observability/shown-url.ts';

/** What serving over stdio needs; the token comes from `BULKHEAD_TOKEN`. */
export interface StdioOptions {
  sql: Sql;
  logger: Logger;
  token: string | undefined;
  auditFullResults?: boolean;
  /** `BULKHEAD_POLICY_TIME_ZONE` (default UTC). */
  policyTimeZone?: string | undefined;
  /** Files gated calls; created automatically when the server has a gated tool. */
  approvals?: ApprovalRequester<ApprovalRecord>;
  approvalWebhookUrl?: string | undefined;
  consoleUrl?: string | undefined;
  /** The upstreams the server declares (`bulkhead.upstreams`). */
  upstreams?: Upstreams;
  /** The upstream MCP servers the server declares (`bulkhead.mcpUpstream`): connected at start, their pins watched. */
  mcpUpstreams?: McpUpstreams;
  /** Per upstream MCP server, its tools not chosen when it was pinned (`pins.json`'s `others`): any other is new. */
  mcpKnownTools?: Record<string, readonly string[]>;
}

/** The token given to a stdio server was refused: the server must not start. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
  // Its message is printed as it is: a URL in it (a driver's error, a DSN) shows no user or password.
  constructor(message: string, options?: ErrorOptions) {
    super(withUrlsShown(message), options);
  }
}

const REASONS: Record<string, string> = {
  malformed: 'is not a Bulkhead token (expected bh_<server>_<id>_<secret>)',
  unknown: 'is not known to this database',
  wrong_server: 'was issued for another server',
  expired: 'has expired',
  revoked: 'has been revoked',
};

/** The watch of the pins of a server in front of upstream MCP servers (none without them). */
function watchPins(
  def: ServerDefinition,
  options: StdioOptions,
  audit: ReturnType<typeof createAuditWriter>,
): PinWatch | undefined {
  if (!options.mcpUpstreams?.byName.size) return undefined;
  return createPinWatch({
    server: def.name,
    tools: def.catalog.tools,
    upstreams: options.mcpUpstreams,
    sql: options.sql,
    audit,
    logger: options.logger,
    ...(options.mcpKnownTools ? { known: options.mcpKnownTools } : {}),
  });
}

/**
 * Serves a definition on this process's stdin/stdout for local clients. The
 * token is checked once at start with the same rules as HTTP; logs must go to
 * stderr (the caller's logger does that in stdio mode).
 */
export async function serveStdio(def: ServerDefinition, options: StdioOptions): Promise<StdioServerHandle> {
  if (!options.token)
    throw new StartupError(
      `BULKHEAD_TOKEN is not set: issue one with \`pnpm bulkhead tokens issue --server ${def.name} --label <who>\``,
    );
  const token = options.token;
  const verifier = createTokenVerifier(options.sql, def.name);
  const verdict = await verifier.verify(token);
  if (!verdict.ok)
    throw new StartupError(
      `BULKHEAD_TOKEN ${REASONS[verdict.reason] ?? 'was refused'}; this server is ${def.name}`,
    );
  const switches = createToolSwitches(options.sql, def.name);
  const policy = watchPolicy(options.sql, options.logger, { timeZone: options.policyTimeZone });
  const audit = createAuditWriter(options.sql);
  // As over HTTP: an upstream tool whose definition drifted from its pin is withheld until accepted.
  const pins = watchPins(def, options, audit);
  const kit: CallKit<ApprovalRecord> = {
    server: def.name,
    catalog: def.catalog,
    sql: options.sql,
    logger: options.logger,
    audit,
    auditFullResults: options.auditFullResults ?? false,
    ...(options.upstreams ? { upstreams: options.upstreams } : {}),
    ...(options.mcpUpstreams ? { mcpUpstreams: options.mcpUpstreams } : {}),
    ...(pins ? { pins } : {}),
    switchedOff: pins ? withWithheld(switches, pins) : switches,
    policy,
    ...approvalsFor(def, options),
  };
  // The connection lives on; the token is checked again on every request, so revocation and expiry hold here too.
  const current = async (request: RequestAudit) => {
    const again = await verifier.verify(token);
    if (again.ok) return again.access;
    request.identify({ tokenId: again.tokenId ?? null, label: again.label ?? null });
    await request
      .settle(() =>
        request.event({
          method: 'stdio',
          outcome: 'unauthorized',
          durationMs: 0,
          resultSummary: { reason: again.reason },
        }),
      )
      .catch((err: unknown) =>
        options.logger.error({ err }, 'audit event for a refusal could not be written'),
      );
    throw new ProtocolError(
      ProtocolErrorCode.InvalidRequest,
      `BULKHEAD_TOKEN ${REASONS[again.reason] ?? 'was refused'}; nothing was done`,
    );
  };
  // Each message is a request of its own: it gets its own id and audit owner as its handler takes it.
  const requestAudit = () => createRequestAudit(kit.audit, randomUUID(), { server: def.name });
  // The instances the factory made (the connection's, and a discarded `server/discover` probe's) are
  // told when a tool is switched off or on; the SDK delivers it as the connection's era wants it.
  const instances = new Set<Server>();
  const toolsChanged = () => {
    for (const server of instances)
      // A probe instance never connected refuses to send: it is dropped.
      Promise.resolve()
        .then(() => server.sendToolListChanged())
        .catch((err: unknown) => {
          options.logger.debug({ err }, 'tools/list_changed not delivered');
          instances.delete(server);
        });
  };
  switches.onChange(toolsChanged);
  pins?.onChange(toolsChanged);
  options.mcpUpstreams?.start();
  const handle = serveSdkStdio(
    () => {
      const server = buildMcpServer(def, kit, { access: current, audit: requestAudit });
      instances.add(server);
      return server;
    },
    { onerror: (err) => options.logger.debug({ err }, 'stdio transport error') },
  );
  return {
    close: async () => {
      await pins?.close();
      await switches.close();
      await policy.close();
      await handle.close();
    },
  };
}
