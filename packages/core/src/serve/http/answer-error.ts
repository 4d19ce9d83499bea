import type { Context } from 'hono';
import type { Logger } from 'pino';
import { traceRefusal } from '../../pipeline/observability/tracing.ts';
import type { ServerDefinition } from '../../pipeline/tool-definition/server-definition.ts';
import { internalError } from '../../pipeline/tool-definition/errors.ts';
import { Refusal, rpcError } from './refusal.ts';
import type { RefusalLog } from './refusal-log.ts';
import { requestEvent } from './request-event.ts';
import type { McpEnv } from './state.ts';

/** A guard's `Refusal`, answered and audited (through the refusal log); anything else an internal error with an incident id. */
export async function answerError(
  err: Error,
  c: Context<McpEnv>,
  def: ServerDefinition,
  refusals: RefusalLog,
  logger: Logger,
): Promise<Response> {
  const request = c.get('audit');
  if (err instanceof Refusal) {
    // Refused before the MCP layer read the body: a server span of its own, which its event names.
    const span = { request: c.req.raw, route: '/mcp', status: err.status, outcome: err.outcome };
    return traceRefusal(span, async () => {
      await refusals
        .record(requestEvent(c, err.outcome, { status: err.status, ...err.options.summary }), {
          request,
          // A refusal because the database is away cannot be provoked at will: each is written (or held) on its own.
          authenticated: c.get('access') !== undefined || err.outcome === 'unavailable',
          source: c.get('source') ?? 'unknown',
        })
        .catch((e: unknown) => logger.error({ err: e }, 'audit event for a refusal could not be written'));
      c.get('log')?.info(
        { status: err.status, outcome: err.outcome, ...err.options.summary },
        'request refused',
      );
      return c.json(err.body, err.status, err.options.headers);
    });
  }
  const { incident, text } = internalError();
  logger.error({ err, incident, requestId: c.get('requestId') }, 'request failed');
  if (request)
    await request
      .settle(() => requestEvent(c, 'internal_error', { status: 500, incident }))
      .catch((e: unknown) => logger.error({ err: e }, 'audit event could not be written'));
  return c.json(rpcError(-32603, text), 500);
}
