import type { AuditEventInput } from '@bulkhead/audit';
import type { Context } from 'hono';
import type { McpEnv } from './state.ts';

/** The event of a request that yields no tool call of its own. */
export function requestEvent(
  c: Context<McpEnv>,
  outcome: AuditEventInput['outcome'],
  summary: Record<string, unknown>,
): AuditEventInput {
  const messages = c.get('messages');
  // The owner knows the server, the request's id and start, and the token once the bearer check named it.
  return c.get('audit').event({
    method: messages[0]?.method ?? `http ${c.req.method}`,
    tool: typeof messages[0]?.tool === 'string' ? messages[0].tool : null,
    outcome,
    resultSummary: summary,
  });
}
