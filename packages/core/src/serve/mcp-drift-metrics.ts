import { Counter, Gauge, type Registry } from 'prom-client';
import type { Drift } from '../pipeline/mcp-upstream/drift.ts';

/**
 * The drift of upstream MCP servers from a server's pins on `/metrics`: drifts this process recorded
 * first, by upstream and kind, and the tools withheld now, by upstream. Returns what the watch calls.
 */
export function mcpDriftMetrics(registry: Registry): {
  observed: (drift: Drift) => void;
  withheldCount: (upstream: string, count: number) => void;
} {
  const drifts = new Counter({
    name: 'bulkhead_mcp_drift_total',
    help: 'Tool definitions of an upstream MCP server that differ from their pin (changed) or are not pinned (new), as first recorded by this process, by upstream and kind.',
    labelNames: ['upstream', 'kind'] as const,
    registers: [registry],
  });
  const withheld = new Gauge({
    name: 'bulkhead_mcp_tools_withheld',
    help: 'Pinned tools of an upstream MCP server withheld now (drifted and not accepted, or no longer listed), by upstream.',
    labelNames: ['upstream'] as const,
    registers: [registry],
  });
  return {
    observed: (d) => drifts.inc({ upstream: d.upstream, kind: d.kind }),
    withheldCount: (upstream, count) => withheld.set({ upstream }, count),
  };
}
