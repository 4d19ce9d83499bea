// The call room: one tools/call, a step a file. call-tool (it arrives) → resolve-tool → validate-arguments
// → run-call (in a write-transaction, or on a read connection) through run-handler, the runner approvals use
// too → shape-result → record-call (its one event), or answer-failure. Builds on every other room here.
import { ProtocolError, type CallToolResult } from '@modelcontextprotocol/server';
import type { AuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { ReadLanes } from '../database/read-lanes.ts';
import type { EventSink, RequestAudit } from '../observability/request-audit.ts';
import type { ToolCatalog } from '../tool-definition/catalog.ts';
import type { AnyTool, ToolContext } from '../tool-definition/define-tool.ts';
import { internalError } from '../tool-definition/errors.ts';
import type { Upstreams } from '../upstream/upstreams.ts';
import type { McpUpstreams } from '../mcp-upstream/upstreams.ts';
import type { PinnedServing } from '../mcp-upstream/pin-watch.ts';
import type { CallVerdict, PolicyGate } from '../policy/gate.ts';
import type { Access } from './access.ts';
import type { ProgressReporter } from './progress.ts';
import { clientOf, errorResult, NOTHING_CHANGED, recordCall } from './record-call.ts';
import { resolveTool } from './resolve-tool.ts';
import { runCall } from './run-call.ts';
import type { SwitchedOff } from './switched-off.ts';
import { validArguments } from './validate-arguments.ts';

/**
 * Files a gated call inside the call's transaction and answers `pending_approval`; implemented by the
 * approval store, whose record of the request (`A`) the call's outcome carries back to its caller.
 */
export interface ApprovalRequester<A = unknown> {
  /** `task`: the client asked for an MCP task; the approval id is then also its task id. */
  request(input: {
    tool: AnyTool;
    args: unknown;
    ctx: ToolContext;
    task?: boolean;
    /** What the company's policy asked of people (stored with the request), or that it runs without one. */
    policy?: CallVerdict;
  }): Promise<{
    approvalId: string;
    result: Record<string, unknown>;
    approval: A;
  }>;
}

/** How a call ended: answered, or filed for approval (with the approval as stored, committed by now). */
export type CallOutcome<A = unknown> =
  | { kind: 'answered'; result: CallToolResult }
  | { kind: 'pending_approval'; result: CallToolResult; approval: A };

/** What the call pipeline needs from its server. */
export interface CallKit<A = unknown> {
  server: string;
  catalog: ToolCatalog;
  sql: Sql;
  /** The read pool, served as lanes (see `createReadLanes`); without it read-only calls borrow from `sql`. */
  reads?: ReadLanes;
  logger: Logger;
  /** The server's writer: what a request writes goes through its own `RequestAudit`, made with it. */
  audit: AuditWriter;
  approvals?: ApprovalRequester<A>;
  auditFullResults: boolean;
  /** The upstreams the server declares (`bulkhead.upstreams`); none when absent. */
  upstreams?: Upstreams;
  /** The upstream MCP servers the server declares (`bulkhead.mcpUpstream`); none when absent. */
  mcpUpstreams?: McpUpstreams;
  /**
   * The pins of tools served from upstream MCP servers, as compared with what the upstreams list now:
   * a withheld tool is also in `switchedOff`; one whose drift an operator accepted is served as accepted.
   */
  pins?: PinnedServing;
  /** The tools an operator has switched off: they do not exist for any client (none when absent). */
  switchedOff?: SwitchedOff;
  /** The company's policy every call asks before it runs or is filed (none: the tools' gates alone). */
  policy?: PolicyGate;
}

/** One tool call as it arrives. */
export interface CallRequest {
  /** As the client sent it: anything but a known tool's name is an unknown tool. */
  name: unknown;
  arguments: unknown;
  access: Access;
  /** The request's audit owner: the call claims its one event from it. */
  audit: RequestAudit;
  clientName?: string | null;
  clientVersion?: string | null;
  /** Aborted when the client withdraws the call or goes away. */
  signal?: AbortSignal;
  /** The client asked for an MCP task: a gated call is filed as one (other calls run as usual). */
  task?: boolean;
  /** Where the handler's `ctx.progress` goes (the client's progress token); nowhere when absent. */
  progress?: ProgressReporter;
}

/**
 * Runs one tool call through every step after authentication: lookup and
 * scope (a tool outside the token's scopes does not exist for it), shape and
 * schema validation, then the handler (or, for a gated tool, the approval
 * request) on a connection of its own whose settings carry the customer the
 * row policies fence on and the tool's time limit as the statement timeout:
 * in a transaction when the tool may change something, else in read-only mode
 * outside any (`withReadConnection`). The tool's time limit covers the whole call, waiting for the
 * connection included: a call that gets none in time answers that the database could not be reached.
 *
 * No effect without its event: a write tool's audit event is inserted in the
 * same transaction as its effects, and a gated call's request with its
 * `pending_approval` event, so both commit or neither does. A read tool's
 * event is group-committed right after; its result is returned only once the
 * event is committed, and withheld if it cannot be. Every call yields exactly
 * one event, refusals and failures included.
 */
export async function callTool<A>(kit: CallKit<A>, req: CallRequest): Promise<CallOutcome<A>> {
  const started = performance.now();
  const name = typeof req.name === 'string' ? req.name : String(req.name as never);
  // The call's event names the token it runs under, however the request's owner was made.
  req.audit.identify(req.access);
  const sink = req.audit.claim();
  try {
    return await answerCall(kit, req, name, sink);
  } catch (err) {
    if (err instanceof ProtocolError) throw err;
    // What fails before the call's own record exists (a bug in reading its arguments) still ends in its one event.
    const { incident, text } = internalError(NOTHING_CHANGED);
    kit.logger.error({ err, incident, requestId: req.audit.requestId, tool: name }, 'tool call failed');
    await sink
      .keep(
        req.audit.event({
          method: 'tools/call',
          client: clientOf(req),
          tool: name,
          arguments: null,
          outcome: 'internal_error',
          since: started,
          resultSummary: { error: text, incident },
        }),
      )
      .catch((e: unknown) => kit.logger.error({ err: e }, 'audit event could not be written'));
    return { kind: 'answered', result: errorResult(text) };
  }
}

/** The call's steps in order: its record opened, the tool resolved, its arguments validated, the call run. */
async function answerCall<A>(
  kit: CallKit<A>,
  req: CallRequest,
  name: string,
  sink: EventSink,
): Promise<CallOutcome<A>> {
  // Recorded from here on: the event knows the tool named (its arguments redacted as its schema says).
  const named = kit.pins?.tool(name) ?? kit.catalog.byName.get(name);
  const rec = recordCall(kit, req, name, named, sink);
  const tool = await resolveTool(kit, req, name, named, rec);
  const args = validArguments(tool, req.arguments, rec.oversized);
  if (typeof args === 'string')
    return { kind: 'answered', result: await rec.refuse('invalid_arguments', args) };
  let approval: { value: A } | undefined;
  const result = await runCall(kit, req, tool, args, rec, (a) => (approval = { value: a }));
  return approval
    ? { kind: 'pending_approval', result, approval: approval.value }
    : { kind: 'answered', result };
}
