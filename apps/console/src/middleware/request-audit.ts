import type { AuditWriter } from '@bulkhead/audit';
import { createEventOwner, type EventDraft, type EventOwner } from '@bulkhead/core/operator';
import type { Context, MiddlewareHandler } from 'hono';
import type { ConsoleEnv } from '../context.ts';

/**
 * The owner of the audit events one console request writes (a sign-in, an OAuth step, an operator's
 * action, a refused form): each carries server `console`, the request's one id and the browser's
 * user agent as its client, and, once the approver middleware has found one, the approver's token.
 */
export interface ConsoleAudit extends EventOwner {
  /** Writes one of the request's events, completed by the owner; resolves once it is committed. */
  append(draft: EventDraft): ReturnType<AuditWriter['append']>;
}

/** The longest user agent an event keeps as its client's name. */
const USER_AGENT_CHARS = 200;

/**
 * Gives every console request its audit owner (`c.get('audit')`), writing with `writer`, and a fresh
 * request id (never the client's: a console event's id is no value a browser chose), returned in
 * `X-Request-Id`.
 */
export function requestAudit(writer: AuditWriter): MiddlewareHandler<ConsoleEnv> {
  return async (c, next) => {
    const owner = createEventOwner({
      server: 'console',
      client: { name: c.req.header('user-agent')?.slice(0, USER_AGENT_CHARS) ?? null, version: null },
    });
    c.set('audit', { ...owner, append: (draft) => writer.append(owner.event(draft)) });
    await next();
    // As the MCP servers do: the answer names the request, so its events can be found in the log.
    c.header('X-Request-Id', owner.requestId);
  };
}

/** The audit owner of a console request, for handlers typed with a plain `Context`. */
export function auditOf(c: Context<ConsoleEnv>): ConsoleAudit {
  return c.get('audit');
}
