import type { AuditEventInput } from '@bulkhead/audit';
import type { Context } from 'hono';
import type { ServerDefinition } from '../../pipeline/tool-definition/server-definition.ts';
import type { McpEnv } from './state.ts';

/** The event of a request that yields no tool call of its own. */
export function requestEvent(
  def: ServerDefinition,
  c: Context<McpEnv>,
  outcome: AuditEventInput['outcome'],
  summary: Record<string, unknown>,
): AuditEventInput {
  const access = c.get('access');
  const presented = c.get('presented');
  const messages = c.get('messages');
  return {
    server: def.name,
    method: messages[0]?.method ?? `http ${c.req.method}`,
    tool: typeof messages[0]?.tool === 'string' ? messages[0].tool : null,
    outcome,
    requestId: c.get('requestId'),
    durationMs: performance.now() - c.get('started'),
    tokenId: access?.tokenId ?? presented?.tokenId ?? null,
    tokenLabel: access?.label ?? presented?.label ?? null,
    resultSummary: summary,
  };
}
