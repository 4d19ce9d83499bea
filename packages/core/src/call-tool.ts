import { randomUUID } from 'node:crypto';
import { ProtocolError, ProtocolErrorCode, type CallToolResult } from '@modelcontextprotocol/server';
import type { AuditEventInput, AuditWriter, Outcome } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { Access } from './access.ts';
import { pendingApprovalOutput } from './approvals/pending-result.ts';
import type { ToolCatalog } from './catalog.ts';
import type { AnyTool, ToolContext } from './define-tool.ts';
import { ToolError, formatIssues } from './errors.ts';
import { shapeResult } from './result.ts';
import { maskSecrets, redactArguments } from './secret.ts';
import { TimeLimitExceeded, withTimeLimit } from './time-limit.ts';

/** The default time limit of a tool call. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** Persists a gated call and answers `pending_approval`; implemented by the approval store. */
export interface ApprovalRequester {
  request(input: { tool: AnyTool; args: unknown; redacted: unknown; ctx: ToolContext }): Promise<{
    approvalId: string;
    result: Record<string, unknown>;
  }>;
}

/** What the call pipeline needs from its server. */
export interface CallKit {
  server: string;
  catalog: ToolCatalog;
  sql: Sql;
  logger: Logger;
  audit: AuditWriter;
  approvals?: ApprovalRequester;
  auditFullResults: boolean;
}

/**
 * Holds a handler to its declared output: the parsed value (unknown keys
 * stripped, so a stray column never reaches the model), or an internal error.
 */
function conformToOutput(tool: AnyTool, value: unknown): unknown {
  if (!tool.output) return value;
  const parsed = tool.output.safeParse(value);
  if (!parsed.success)
    throw new Error(`${tool.name} returned a value outside its output schema: ${parsed.error.message}`);
  return parsed.data;
}

/** One tool call as it arrives. */
export interface CallRequest {
  name: string;
  arguments: unknown;
  access: Access;
  requestId: string;
  clientName?: string | null;
  clientVersion?: string | null;
  /** Aborted when the client goes away. */
  signal?: AbortSignal;
}

function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * Runs one tool call through every step after authentication: lookup, scope,
 * validation, audit readiness (write tools), approval gate, handler under a
 * time limit, result shaping, audit. The audit event is committed before the
 * result is returned; if it cannot be, the result is withheld.
 */
export async function callTool(kit: CallKit, req: CallRequest): Promise<CallToolResult> {
  const started = performance.now();
  const logger = kit.logger.child({ requestId: req.requestId, tool: req.name });
  const tool = kit.catalog.byName.get(req.name);
  const base: Omit<AuditEventInput, 'outcome' | 'durationMs'> = {
    server: kit.server,
    method: 'tools/call',
    requestId: req.requestId,
    tokenId: req.access.tokenId,
    tokenLabel: req.access.label,
    clientName: req.clientName ?? null,
    clientVersion: req.clientVersion ?? null,
    tool: req.name,
    // An unknown tool's arguments are not recorded: which of them are secret is unknown.
    arguments: tool ? redactArguments(tool.input, req.arguments) : null,
  };
  const record = async (outcome: Outcome, extra: Partial<AuditEventInput> = {}) => {
    await kit.audit.append({ ...base, outcome, durationMs: performance.now() - started, ...extra });
  };
  const finish = async (outcome: Outcome, result: CallToolResult, extra: Partial<AuditEventInput> = {}) => {
    try {
      await record(outcome, extra);
    } catch (err) {
      logger.error({ err }, 'audit event could not be written');
      return errorResult(
        'The audit log could not record this call, so its result is withheld. Try again in a moment; if it persists, tell the operator.',
      );
    }
    return result;
  };

  if (!tool || !req.access.scopes.includes(tool.scope)) {
    // A tool outside the token's scopes does not exist for this client.
    const names =
      req.arguments && typeof req.arguments === 'object' ? Object.keys(req.arguments).slice(0, 50) : [];
    await record('unknown_tool', { resultSummary: { argument_names: names } }).catch((err: unknown) =>
      logger.error({ err }, 'audit event could not be written'),
    );
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${req.name}`);
  }

  const parsed = tool.input.safeParse(req.arguments ?? {});
  if (!parsed.success) {
    const text = formatIssues(parsed.error, maskSecrets(tool.input, req.arguments ?? {}));
    return finish('invalid_arguments', errorResult(text), { resultSummary: { error: text } });
  }

  if (!tool.annotations.readOnlyHint) {
    try {
      await kit.audit.check();
    } catch (err) {
      logger.error({ err }, 'audit log unavailable; write tool refused');
      return errorResult(
        'The audit log is unavailable, so this action was not carried out. Nothing changed; try again later.',
      );
    }
  }

  const timeoutMs = tool.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const context = (signal: AbortSignal): ToolContext => ({
    access: req.access,
    sql: kit.sql,
    logger,
    signal,
    server: kit.server,
    requestId: req.requestId,
  });

  try {
    if (tool.approval) {
      if (!kit.approvals) throw new Error(`tool ${tool.name} is gated but this server has no approval store`);
      const approvals = kit.approvals;
      const gated = await withTimeLimit(
        timeoutMs,
        (signal) =>
          approvals.request({ tool, args: parsed.data, redacted: base.arguments, ctx: context(signal) }),
        req.signal,
      );
      const shaped = shapeResult(
        { ...tool, output: pendingApprovalOutput },
        gated.result,
        kit.auditFullResults,
      );
      return await finish('pending_approval', shaped.result, {
        approvalId: gated.approvalId,
        resultSummary: shaped.summary,
        injectionSuspected: shaped.injectionSuspected,
      });
    }
    const returned = await withTimeLimit(
      timeoutMs,
      (signal) => tool.handler(parsed.data, context(signal)),
      req.signal,
    );
    const value = conformToOutput(tool, returned);
    const shaped = shapeResult(tool, value, kit.auditFullResults);
    return await finish('ok', shaped.result, {
      resultSummary: shaped.summary,
      injectionSuspected: shaped.injectionSuspected,
    });
  } catch (err) {
    if (err instanceof TimeLimitExceeded) {
      const text = `${tool.name} did not finish within ${timeoutMs / 1000} s and was stopped. Try again, or narrow the request.`;
      return finish('timeout', errorResult(text), { resultSummary: { error: text } });
    }
    if (err instanceof ToolError) {
      return finish('tool_error', errorResult(err.message), { resultSummary: { error: err.message } });
    }
    const incident = randomUUID().slice(0, 8);
    logger.error({ err, incident }, 'tool failed');
    const text = `Internal error, incident ${incident}. The details are in the server's log under that id; retrying may not help.`;
    return finish('internal_error', errorResult(text), { resultSummary: { error: text, incident } });
  }
}
