import {
  CLIENT_INFO_META_KEY,
  type CallToolRequest,
  type CallToolResult,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { Access } from '../pipeline/call/access.ts';
import type { ToolListing } from '../pipeline/tool-definition/catalog.ts';
import type { ApprovalRecord } from '../approvals/store.ts';
import { callTool, type CallKit, type CallOutcome } from '../pipeline/call/call-tool.ts';
import type { RequestAudit } from '../pipeline/observability/request-audit.ts';
import { traceMcpRequest } from '../pipeline/observability/tracing.ts';
import { hasGatedTools, type ServerDefinition } from '../pipeline/tool-definition/server-definition.ts';
import { createProgressChannel, NO_PROGRESS } from '../pipeline/call/progress.ts';
import type { ResultWaits } from '../tasks/result-waits.ts';
import { declaresTasks, registerTaskHandlers } from '../tasks/task-handlers.ts';
import { TaskAwareServer, taskAnswer } from '../tasks/task-server.ts';
import { createTaskResult, type TaskWire } from '../tasks/task-state.ts';

/** Who a protocol instance serves, and how its calls report back to the request that carries them. */
export interface Caller {
  /**
   * Resolved (HTTP checks the token before), or resolved again for every request (stdio, where one
   * connection outlives a revocation; a refusal then is the request's event).
   */
  access: Access | ((audit: RequestAudit) => Promise<Access>);
  /** The audit owner of the request that carries this message (HTTP: the request's; stdio: a new one per message). */
  audit: () => RequestAudit;
  /**
   * Registers a call under its JSON-RPC id, so that a `notifications/cancelled` arriving in another
   * HTTP request (a 2025-11-25 client) can stop it; its signal also aborts with `parent` (the call's
   * own request going away); `done` when the call is over.
   */
  cancellable?: (rpcId: string | number, parent: AbortSignal) => { signal: AbortSignal; done: () => void };
  /** The process's caps on open `tasks/result` waits (none on stdio, which serves one client). */
  resultWaits?: ResultWaits | undefined;
}

/**
 * Whether the client asks for this call to run as a task, by its revision's rules: on 2026-07-28
 * by declaring the tasks extension in the request's own capabilities (the server then decides, and
 * makes a task of a gated call); on 2025-11-25 by a `task` object in the call's params.
 */
function asksForTask(wire: TaskWire, params: Record<string, unknown>, ctx: ServerContext): boolean {
  if (wire === '2025-11-25')
    return typeof params.task === 'object' && params.task !== null && !Array.isArray(params.task);
  return declaresTasks(ctx);
}

/** The tools/list of a token with `scopes`: the catalog's, less the tools switched off. */
function visibleTools(
  def: ServerDefinition,
  scopes: readonly string[],
  off: ReadonlySet<string> | undefined,
  pins: CallKit['pins'],
): ToolListing[] {
  const listed = def.catalog.visible(scopes);
  const on = off?.size ? listed.filter((t) => !off.has(t.name)) : listed;
  // A pinned upstream tool whose drift an operator accepted is listed as accepted.
  return pins ? on.map((t) => pins.listing(t.name) ?? t) : on;
}

/**
 * Builds the MCP server instance for one request (HTTP) or one connection
 * (stdio). Cheap by design: listings and schemas come precomputed from the
 * catalog; the handlers are a few closures. A server with gated tools also
 * runs tasks: a gated call made as a task answers the task, and the task
 * methods answer for it (see `registerTaskHandlers`).
 */
export function buildMcpServer(def: ServerDefinition, kit: CallKit<ApprovalRecord>, caller: Caller): Server {
  const access = caller.access;
  const who = (audit: RequestAudit) =>
    typeof access === 'function' ? access(audit) : Promise.resolve(access);
  const runsTasks = hasGatedTools(def) && kit.approvals !== undefined;
  const server = new TaskAwareServer(
    {
      name: def.name,
      version: def.version,
      title: def.title,
      description: def.description,
      ...(def.icons ? { icons: def.icons } : {}),
    },
    // The tools change when an operator switches one off or on: every channel a client can listen on is
    // told (stdio, and 2026-07-28 `subscriptions/listen` over HTTP; stateless HTTP has no 2025 GET stream).
    { capabilities: { tools: { listChanged: true } } },
    runsTasks,
  );
  const client = (ctx: ServerContext) => {
    const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
    const info = (envelope?.[CLIENT_INFO_META_KEY] ?? server.getClientVersion()) as
      { name?: unknown; version?: unknown } | undefined;
    return {
      name: typeof info?.name === 'string' ? info.name : null,
      version: typeof info?.version === 'string' ? info.version : null,
    };
  };

  const traced = <T>(
    method: string,
    target: string | undefined,
    meta: unknown,
    ctx: ServerContext,
    fn: () => Promise<T>,
  ) => traceMcpRequest(server, { method, target, meta, ctx }, fn);
  server.setRequestHandler('tools/list', (request, ctx) =>
    traced('tools/list', undefined, request.params?._meta, ctx, async () => ({
      tools: visibleTools(def, (await who(caller.audit())).scopes, await kit.switchedOff?.names(), kit.pins),
    })),
  );
  server.setRequestHandler('tools/call', (request, ctx) =>
    traced('tools/call', String(request.params.name), request.params._meta, ctx, () =>
      callHandler(request, ctx),
    ),
  );
  const callHandler = async (request: CallToolRequest, ctx: ServerContext): Promise<CallToolResult> => {
    const { name: clientName, version: clientVersion } = client(ctx);
    const audit = caller.audit();
    const access = await who(audit);
    const wire = server.wire();
    const task = runsTasks && asksForTask(wire, request.params as Record<string, unknown>, ctx);
    const token = request.params._meta?.progressToken;
    const progress =
      token === undefined
        ? NO_PROGRESS
        : createProgressChannel((update) =>
            ctx.mcpReq.notify({
              method: 'notifications/progress',
              params: { progressToken: token, ...update },
            }),
          );
    const tracked = caller.cancellable?.(ctx.mcpReq.id, ctx.mcpReq.signal);
    let outcome: CallOutcome<ApprovalRecord> | undefined;
    try {
      outcome = await callTool(kit, {
        name: request.params.name,
        arguments: request.params.arguments,
        access,
        audit,
        clientName,
        clientVersion,
        signal: tracked?.signal ?? ctx.mcpReq.signal,
        task,
        progress: progress.report,
      });
    } finally {
      tracked?.done();
      await progress.finish(outcome !== undefined && outcome.result.isError !== true);
    }
    // The approval is committed by now, so the task exists for tasks/get on every replica.
    if (task && outcome.kind === 'pending_approval')
      return taskAnswer(createTaskResult(outcome.approval, wire)) as CallToolResult;
    const listing = def.catalog.listings.get(request.params.name);
    return server.projectCallToolResult(outcome.result, listing?.outputSchema);
  };
  registerTaskHandlers(server, {
    kit,
    who,
    audit: caller.audit,
    client,
    runsTasks,
    resultWaits: caller.resultWaits,
  });
  return server;
}
