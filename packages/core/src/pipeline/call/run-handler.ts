import type { Sql } from '@bulkhead/db';
import type { Access } from './access.ts';
import type { AnyTool, Outbox, ToolContext } from '../tool-definition/define-tool.ts';
import { ToolError } from '../tool-definition/errors.ts';
import { guardedSql, openCallTransaction, type TransactionSql } from '../database/guarded-sql.ts';
import type { ProgressReporter } from './progress.ts';
import type { ReadSettings } from '../database/read-lanes.ts';
import { Cancelled, TimeLimitExceeded, withTimeLimit } from './time-limit.ts';
import { createUpstreamClient } from '../upstream/client.ts';
import { createUpstreams, type UpstreamRecord, type Upstreams } from '../upstream/upstreams.ts';
import type { Logger } from 'pino';
import { createMcpUpstreamClient } from '../mcp-upstream/client.ts';
import type { McpUpstreams } from '../mcp-upstream/upstreams.ts';

const NO_UPSTREAMS = createUpstreams();

/** What a handler's context carries besides its connection and signal, which the runner adds. */
export interface HandlerContext {
  access: Access;
  logger: Logger;
  server: string;
  requestId: string;
  progress: ProgressReporter;
  /** The server's declared upstreams (none when absent), where the call's requests are recorded, and whether it may only read. */
  upstreams: { declared: Upstreams | undefined; records: UpstreamRecord[]; readOnly: boolean };
  /** The server's declared upstream MCP servers (none when absent); their calls go into `upstreams.records`. */
  mcpUpstreams?: McpUpstreams | undefined;
  /** Set only while an approved action runs: its outbox, on the handler's guarded connection. */
  outbox?: (sql: Sql) => Outbox;
  approval?: ToolContext['approval'];
}

/** One run of a handler, live or approved. */
export interface HandlerRun<T> {
  tool: AnyTool;
  /** The call's connection: a transaction whose settings `open` sends, or a read connection already set. */
  q: TransactionSql | Sql;
  /** The customer, proof and time limit `openCallTransaction` sends, pipelined with the handler's first query. */
  open?: ReadSettings & { approvalId?: string };
  /** Told the backend's pid once the settings are open: a withdrawn call may cancel its query. */
  onBackend?: (pid: number) => void;
  /** The time the run has left. */
  timeLimitMs: number;
  /** Aborted when the client withdraws the call (none for an approved run). */
  withdrawn?: AbortSignal | undefined;
  context: HandlerContext;
  /** What runs with the context: usually {@link callHandler}; a gated live call files its request instead. */
  work: (ctx: ToolContext) => Promise<T>;
}

/**
 * The one way a handler runs, for the live call and the approved one alike: its transaction's
 * settings (customer and time limit) opened, its context built on a guarded connection, under the
 * tool's time limit. A failure is thrown as it came: {@link classifyFailure} names it.
 */
export async function runHandler<T>(run: HandlerRun<T>): Promise<T> {
  const opened = run.open
    ? openCallTransaction(run.q as TransactionSql, run.open).then((pid) => run.onBackend?.(pid))
    : Promise.resolve();
  // Sent without waiting for its answer: the handler's first query follows it on the same connection.
  opened.catch(() => {});
  const value = await withTimeLimit(
    Math.max(1, run.timeLimitMs),
    (signal) => run.work(toolContext(run.tool, run.q, run.context, signal)),
    run.withdrawn,
  );
  await opened;
  return value;
}

function toolContext(
  tool: AnyTool,
  q: TransactionSql | Sql,
  c: HandlerContext,
  signal: AbortSignal,
): ToolContext {
  const sql = guardedSql(q, signal);
  return {
    access: c.access,
    sql,
    logger: c.logger,
    signal,
    server: c.server,
    requestId: c.requestId,
    progress: c.progress,
    upstream: (name) =>
      createUpstreamClient(c.upstreams.declared ?? NO_UPSTREAMS, name, {
        signal,
        records: c.upstreams.records,
        readOnly: c.upstreams.readOnly,
      }),
    mcpUpstream: (name) =>
      createMcpUpstreamClient(c.mcpUpstreams, name, {
        signal,
        progress: c.progress,
        records: c.upstreams.records,
        recorded: (r) => c.upstreams.declared?.recorded(r),
      }),
    ...(c.outbox ? { outbox: c.outbox(sql) } : {}),
    ...(c.approval ? { approval: c.approval } : {}),
  };
}

/**
 * The handler's value held to its declared output: the parsed value (unknown keys stripped, so a
 * stray column never reaches the model, nor an approval's stored result), or an internal error.
 */
export async function callHandler(tool: AnyTool, args: unknown, ctx: ToolContext): Promise<unknown> {
  const value: unknown = await tool.handler(args, ctx);
  if (!tool.output) return value;
  const parsed = tool.output.safeParse(value);
  if (!parsed.success)
    throw new Error(`${tool.name} returned a value outside its output schema: ${parsed.error.message}`);
  return parsed.data;
}

/** How a handler's run failed, as both paths tell it apart; `other` is theirs to name (or an internal error). */
export type HandlerFailure =
  { kind: 'timeout' } | { kind: 'cancelled' } | { kind: 'tool_error'; error: ToolError } | { kind: 'other' };

/**
 * Names a failed run: past its time limit (the runner's, or the database's statement timeout, 57014),
 * withdrawn by the client (`withdrawn` aborted), a failure the model can act on, or anything else.
 */
export function classifyFailure(err: unknown, withdrawn?: AbortSignal): HandlerFailure {
  if (err instanceof TimeLimitExceeded || (err as { code?: string } | null)?.code === '57014')
    return withdrawn?.aborted ? { kind: 'cancelled' } : { kind: 'timeout' };
  if (err instanceof Cancelled) return { kind: 'cancelled' };
  if (err instanceof ToolError) return { kind: 'tool_error', error: err };
  return { kind: 'other' };
}
