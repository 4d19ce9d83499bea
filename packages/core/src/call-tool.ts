import { randomUUID } from 'node:crypto';
import { ProtocolError, ProtocolErrorCode, type CallToolResult } from '@modelcontextprotocol/server';
import type { AuditEventInput, AuditWriter, Outcome } from '@bulkhead/audit';
import { isConnectionError, type Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { lazyChild } from './logger.ts';
import type { Access } from './access.ts';
import { pendingApprovalOutput } from './pending-result.ts';
import { textArgumentError } from './argument-text.ts';
import type { ToolCatalog } from './catalog.ts';
import type { ReadLanes } from './read-lanes.ts';
import type { AnyTool, ToolContext } from './define-tool.ts';
import { ToolError, formatIssues } from './errors.ts';
import { guardedSql, openCallTransaction, withReadConnection, type TransactionSql } from './guarded-sql.ts';
import { NO_PROGRESS, type ProgressReporter } from './progress.ts';
import { shapeResult, type ShapedResult } from './result.ts';
import { maskSecrets, redactArguments } from './secret.ts';
import { ARGUMENT_LIMITS, argumentsOverLimit, type OverLimit } from './argument-limits.ts';
import { Cancelled, NoConnectionInTime, TimeLimitExceeded, waitAtMost, withTimeLimit } from './time-limit.ts';
import { createUpstreamClient, UpstreamError } from './upstream/client.ts';
import { createUpstreams, type UpstreamRecord, type Upstreams } from './upstream/upstreams.ts';

/** The default time limit of a tool call. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** Files a gated call inside the call's transaction and answers `pending_approval`; implemented by the approval store. */
export interface ApprovalRequester {
  /** `task`: the client asked for an MCP task; the approval id is then also its task id. */
  request(input: { tool: AnyTool; args: unknown; ctx: ToolContext; task?: boolean }): Promise<{
    approvalId: string;
    result: Record<string, unknown>;
  }>;
}

/** What the call pipeline needs from its server. */
export interface CallKit {
  server: string;
  catalog: ToolCatalog;
  sql: Sql;
  /** The read pool, served as lanes (see `createReadLanes`); without it read-only calls borrow from `sql`. */
  reads?: ReadLanes;
  logger: Logger;
  audit: AuditWriter;
  approvals?: ApprovalRequester;
  auditFullResults: boolean;
  /** The upstreams the server declares (`bulkhead.upstreams`); none when absent. */
  upstreams?: Upstreams;
}

const NO_UPSTREAMS = createUpstreams();

/** One tool call as it arrives. */
export interface CallRequest {
  /** As the client sent it: anything but a known tool's name is an unknown tool. */
  name: unknown;
  arguments: unknown;
  access: Access;
  requestId: string;
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

function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * What an oversized call is told: the argument whose value passed a bound, or, when the arguments
 * hold too many keys of their own, the first few this tool does not have (as its schema would name them).
 */
function oversizedArguments(over: OverLimit, args: object, input: z.ZodObject): string {
  const { values, depth, chars } = ARGUMENT_LIMITS;
  const bounds = `arguments hold at most ${values} values, ${depth} levels deep and ${chars} characters of text`;
  if (over.field !== null) return `"${over.field.slice(0, 100)}": ${over.problem} (${bounds})`;
  const unknown: string[] = [];
  let count = 0;
  for (const key in args) {
    if (Object.hasOwn(input.shape, key)) continue;
    if (unknown.length < 10) unknown.push(JSON.stringify(key.slice(0, 100)));
    count++;
  }
  const more = count > unknown.length ? ` and ${(count - unknown.length).toLocaleString('en-US')} more` : '';
  return `${unknown.join(', ')}${more}: not arguments of this tool, ${over.problem} in all (${bounds}); remove them`;
}

const WITHHELD =
  'The audit log could not record this call, so its result is withheld. Nothing was changed; try again in a moment, and if it persists, tell the operator.';

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
export async function callTool(kit: CallKit, req: CallRequest): Promise<CallToolResult> {
  const started = performance.now();
  const name = typeof req.name === 'string' ? req.name : String(req.name as never);
  const logger = lazyChild(kit.logger, { requestId: req.requestId, tool: name });
  const tool = kit.catalog.byName.get(name);
  // Walked before anything else looks at them (the schema, the audit copy): cheap, and bounded whatever was sent.
  const oversized = tool ? argumentsOverLimit(req.arguments) : null;
  const base: Omit<AuditEventInput, 'outcome' | 'durationMs'> = {
    server: kit.server,
    method: 'tools/call',
    requestId: req.requestId,
    tokenId: req.access.tokenId,
    tokenLabel: req.access.label,
    clientName: req.clientName ?? null,
    clientVersion: req.clientVersion ?? null,
    tool: name,
    // An unknown tool's arguments are not recorded: which of them are secret is unknown; oversized ones neither.
    arguments: tool && !oversized ? redactArguments(tool.input, req.arguments) : null,
  };
  /** The call's requests to upstreams, kept in its event (refused ones included). */
  const upstreamCalls: UpstreamRecord[] = [];
  const event = (outcome: Outcome, extra: Partial<AuditEventInput> = {}): AuditEventInput => ({
    ...base,
    outcome,
    durationMs: performance.now() - started,
    ...extra,
    ...(upstreamCalls.length
      ? {
          resultSummary: {
            ...(extra.resultSummary as Record<string, unknown> | undefined),
            upstream: [...upstreamCalls],
          },
        }
      : {}),
  });
  /**
   * Records the outcome on its own (nothing else to commit with it) and answers, or withholds the
   * answer. A refusal discloses nothing and says that nothing was done: it goes out even when the
   * database is away, its event held until the database is back. A result goes out only once its
   * event is committed.
   */
  const finish = async (outcome: Outcome, result: CallToolResult, extra: Partial<AuditEventInput> = {}) => {
    if (result.isError) {
      await kit.audit
        .keep(event(outcome, extra))
        .catch((err: unknown) => logger.error({ err, outcome }, 'audit event could not be written'));
      return result;
    }
    return release(event(outcome, extra), result);
  };
  /** Answers with `result` once `done` is committed; withholds it when the event cannot be written. */
  const release = async (given: AuditEventInput, result: CallToolResult) => {
    // One id for both attempts: if the first committed though its answer was lost, the second is not stored twice.
    const done = { ...given, id: given.id ?? randomUUID() };
    try {
      // Not past the call's time limit (or a moment after a call that used it up): a database that
      // stalls in a failover would otherwise hold the answer through every queued batch's connect timeout.
      // Given up on, the event may still commit; the withheld one below has the same id and is then not stored.
      await waitAtMost(kit.audit.append(done), Math.max(deadline, performance.now() + 1_000), timeoutMs);
      return result;
    } catch (err) {
      logger.error(
        { err, outcome: done.outcome },
        'audit event could not be written; the result is withheld',
      );
      if (!isConnectionError(err)) return errorResult(WITHHELD);
      const text = `${name} could not record its result in the audit log because the database is unreachable, so the result is withheld. Try again in a few seconds.`;
      await kit.audit
        .keep({ ...done, outcome: 'unavailable', resultSummary: { error: text, withheld: done.outcome } })
        .catch(() => {});
      return errorResult(text);
    }
  };
  const refuse = (outcome: Outcome, text: string) =>
    finish(outcome, errorResult(text), { resultSummary: { error: text } });

  if (!tool || !req.access.scopes.includes(tool.scope)) {
    // A tool outside the token's scopes does not exist for this client, as in its tools/list.
    const names =
      req.arguments && typeof req.arguments === 'object' ? Object.keys(req.arguments).slice(0, 50) : [];
    await kit.audit
      .append(event('unknown_tool', { resultSummary: { argument_names: names } }))
      .catch((err: unknown) => logger.error({ err }, 'audit event could not be written'));
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name.slice(0, 200)}`);
  }
  const args = req.arguments ?? {};
  const invalid = (what: string) =>
    refuse(
      'invalid_arguments',
      `Invalid arguments — ${what}. Nothing was done; call again with corrected arguments.`,
    );
  if (typeof args !== 'object' || Array.isArray(args))
    return invalid('arguments: expected an object of named arguments');
  if (oversized) return invalid(oversizedArguments(oversized, args, tool.input));
  const parsed = tool.input.safeParse(args);
  if (!parsed.success)
    return refuse('invalid_arguments', formatIssues(parsed.error, maskSecrets(tool.input, args)));
  const textError = textArgumentError(parsed.data);
  if (textError) return refuse('invalid_arguments', textError);

  const timeoutMs = tool.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // One time limit for the whole call: waiting for a connection counts against it too.
  const deadline = performance.now() + timeoutMs;
  const writes = !tool.annotations.readOnlyHint || Boolean(tool.approval);
  /** The backend a withdrawn call may cancel, once known (none while it shares a read lane). */
  let target: () => number | undefined = () => undefined;
  // Past this point the transaction's COMMIT is on its way: a lost connection leaves its fate unknown.
  let committing = false;
  const stop = () => {
    // A withdrawn call's query would run on until its statement timeout: stop it now.
    const pid = target();
    if (pid !== undefined) kit.sql`select pg_cancel_backend(${pid})`.catch(() => {});
  };
  req.signal?.addEventListener('abort', stop, { once: true });
  try {
    /** The call itself, on the connection `q` whose settings `opened` sends (pipelined with the handler's first query). */
    const run = async (q: TransactionSql | Sql, opened: Promise<unknown>) => {
      const shaped: ShapedResult & { approvalId?: string; outcome: Outcome } = await withTimeLimit(
        Math.max(1, deadline - performance.now()),
        async (signal) => {
          const ctx: ToolContext = {
            access: req.access,
            sql: guardedSql(q, signal),
            logger,
            signal,
            server: kit.server,
            requestId: req.requestId,
            progress: req.progress ?? NO_PROGRESS.report,
            upstream: (upstreamName) =>
              createUpstreamClient(kit.upstreams ?? NO_UPSTREAMS, upstreamName, {
                signal,
                records: upstreamCalls,
                // A gated call only files its request here: its effects run after approval, from the outbox.
                readOnly: tool.annotations.readOnlyHint || Boolean(tool.approval),
              }),
          };
          if (tool.approval) {
            if (!kit.approvals)
              throw new Error(`tool ${tool.name} is gated but this server has no approval store`);
            const task = req.task === true;
            const gated = await kit.approvals.request({ tool, args: parsed.data, ctx, task });
            const result = shapeResult(
              { ...tool, output: pendingApprovalOutput },
              gated.result,
              kit.auditFullResults,
            );
            if (task) result.summary.task = true;
            return { ...result, approvalId: gated.approvalId, outcome: 'pending_approval' as const };
          }
          const value = conformToOutput(tool, await tool.handler(parsed.data, ctx));
          return { ...shapeResult(tool, value, kit.auditFullResults), outcome: 'ok' as const };
        },
        req.signal,
      );
      await opened;
      const done = event(shaped.outcome, {
        resultSummary: shaped.summary,
        injectionSuspected: shaped.injectionSuspected,
        ...(shaped.approvalId ? { approvalId: shaped.approvalId } : {}),
      });
      // What changes the world commits with its event, or not at all.
      if (writes) await kit.audit.appendIn(q as TransactionSql, done);
      committing = true;
      return { shaped, done };
    };
    const settings = { customerId: req.access.customerId, timeoutMs };
    const outcome = writes
      ? await transaction((tx: TransactionSql) => {
          // Sent without waiting for its answer: the handler's first query follows it on the same connection.
          const opened = openCallTransaction(tx, settings).then((pid) => {
            target = () => pid;
          });
          opened.catch(() => {});
          return run(tx, opened);
        })
      : await withReadConnection(
          kit.sql,
          kit.reads,
          { ...settings, onStoppable: (t) => (target = t), signal: req.signal },
          (conn) => run(conn, Promise.resolve()),
        );
    return writes ? outcome.shaped.result : release(outcome.done, outcome.shaped.result);
  } catch (err) {
    if (err instanceof TimeLimitExceeded || (err as { code?: string }).code === '57014') {
      if (req.signal?.aborted) return cancelled();
      const text = `${tool.name} did not finish within ${timeoutMs / 1000} s and was stopped; nothing it did was kept. Try again, or narrow the request.`;
      return refuse('timeout', text);
    }
    if (err instanceof Cancelled) return cancelled();
    if (err instanceof UpstreamError) return refuse(err.outcome, err.message);
    if (err instanceof ToolError) return refuse('tool_error', err.message);
    // A read-only call runs read-only on purpose: its write refused (25006) is the tool's fault, not a failover's.
    const ownReadOnly = !writes && (err as { code?: string }).code === '25006';
    if (isConnectionError(err) && !ownReadOnly) {
      logger.warn({ err }, 'database unavailable');
      // A change whose COMMIT lost its connection may or may not have been made: say so rather than guess.
      return refuse(
        'unavailable',
        writes && committing
          ? `${tool.name} lost its connection to the database while committing: the change may have been made. Check before repeating it; try again in a few seconds.`
          : `${tool.name} could not reach the database. Nothing was changed; try again in a few seconds.`,
      );
    }
    const incident = randomUUID().slice(0, 8);
    logger.error({ err, incident }, 'tool failed');
    const text = `Internal error, incident ${incident}. Nothing was changed. The details are in the server's log under that id; retrying may not help.`;
    return finish('internal_error', errorResult(text), { resultSummary: { error: text, incident } });
  } finally {
    req.signal?.removeEventListener('abort', stop);
  }

  /**
   * `kit.sql.begin(fn)`, waiting for its connection no longer than the call's time limit (or until
   * the client withdraws the call): a transaction given up on before it began rolls back at once,
   * before `fn` runs. Once `fn` runs, its own time limit holds.
   */
  async function transaction<T>(fn: (tx: TransactionSql) => Promise<T>): Promise<T> {
    let abandoned = false;
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const done = kit.sql.begin((tx: TransactionSql) => {
      if (abandoned) throw new NoConnectionInTime(timeoutMs);
      entered();
      return fn(tx);
    }) as Promise<T>;
    done.catch(() => {});
    try {
      await waitAtMost(Promise.race([inside, done]), deadline, timeoutMs, req.signal);
    } catch (err) {
      abandoned = true;
      throw err;
    }
    return done;
  }

  function cancelled() {
    return refuse('cancelled', `${tool!.name} was cancelled by the client; nothing it did was kept.`);
  }
}
