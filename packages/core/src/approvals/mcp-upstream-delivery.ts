import { McpUpstreamDown } from '../pipeline/mcp-upstream/connection.ts';
import { mcpAnswer } from '../pipeline/mcp-upstream/client.ts';
import { MCP_UPSTREAM_EFFECT, mcpUpstreamEffectSchema } from '../pipeline/mcp-upstream/pinned-tool.ts';
import type { McpUpstreams } from '../pipeline/mcp-upstream/upstreams.ts';
import { DeliveryError, type Deliverer } from './outbox.ts';

export { MCP_UPSTREAM_EFFECT };

/** How long one delivery may take before its outcome is unknown (below the outbox lease of 60 s). */
const DELIVERY_LIMIT_MS = 45_000;

/**
 * Delivers approved calls to upstream MCP servers, at most once: an MCP server takes no idempotency
 * key, so a call is sent on the first attempt only. Every failure is final (a permanent
 * {@link DeliveryError}) and says what is known: not sent (the upstream was down), failed (the
 * upstream answered an error), or outcome unknown (sent, and then the answer was lost, or an earlier
 * attempt was interrupted): the approver checks by hand; nothing is repeated blindly.
 */
export function mcpUpstreamDeliverer(upstreams: McpUpstreams): Deliverer {
  return async (item, { logger, signal }) => {
    const effect = mcpUpstreamEffectSchema.parse(item.payload);
    const what = `${effect.tool} on the upstream MCP server ${effect.upstream}`;
    if (item.attempt > 1)
      throw new DeliveryError(
        `outcome unknown: an earlier attempt to call ${what} was interrupted before its end was recorded; it is sent at most once, so it was not sent again — check ${effect.upstream} by hand`,
        undefined,
        true,
      );
    const connection = upstreams.byName.get(effect.upstream);
    if (!connection)
      throw new DeliveryError(`not sent: ${effect.upstream} is not a declared upstream`, undefined, true);
    let client;
    try {
      client = await connection.client(5_000);
    } catch (err) {
      if (!(err instanceof McpUpstreamDown)) throw err;
      throw new DeliveryError(
        `not sent: ${effect.upstream} was not reachable, so ${what} was not sent, and will not be retried`,
        undefined,
        true,
      );
    }
    let result;
    try {
      result = await client.callTool(
        { name: effect.tool, arguments: effect.arguments },
        {
          signal: AbortSignal.any([signal, AbortSignal.timeout(DELIVERY_LIMIT_MS)]),
          timeout: DELIVERY_LIMIT_MS,
        },
      );
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new DeliveryError(
        `outcome unknown: ${what} was sent but no answer came back (${reason.slice(0, 200)}); it is sent at most once, so it was not sent again — check ${effect.upstream} by hand`,
        undefined,
        true,
      );
    }
    const answer = mcpAnswer(effect.upstream, effect.tool, result);
    const text = answer.content.map((c) => ('text' in c ? c.text : c.note)).join('\n');
    if (result.isError)
      throw new DeliveryError(
        `failed: ${effect.upstream} answered that ${effect.tool} failed: ${JSON.stringify(text.slice(0, 300))}`,
        undefined,
        true,
      );
    logger.info(
      { upstream: effect.upstream, tool: effect.tool, chars: text.length },
      'upstream call delivered',
    );
  };
}
