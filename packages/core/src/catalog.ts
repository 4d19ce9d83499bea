import { z } from 'zod';
import type { AnyTool } from './define-tool.ts';
import { pendingApprovalOutput } from './approvals/pending-result.ts';

/** The tools/list entry of one tool, computed once per process. */
export interface ToolListing {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown> & { type: 'object' };
  outputSchema?: Record<string, unknown> & { type: 'object' };
  annotations: AnyTool['annotations'] & { title: string };
  icons?: AnyTool['icons'];
}

/** Everything about a server's tools that does not change per request. */
export interface ToolCatalog {
  tools: readonly AnyTool[];
  byName: ReadonlyMap<string, AnyTool>;
  listings: ReadonlyMap<string, ToolListing>;
  /** Every scope some tool of this server needs: what a token gets when issued without `--scopes`. */
  scopes: readonly string[];
  /** The tools a token with `scopes` may see, in declaration order. */
  visible(scopes: readonly string[]): ToolListing[];
}

const SAFE_INTEGER = Number.MAX_SAFE_INTEGER;

/**
 * Drops what costs characters on every tools/list and tells a client nothing:
 * zod's default integer bounds (±2^53-1) everywhere, and `additionalProperties:
 * false` on output objects (a client validating a result needs the fields, not
 * a ban on extra ones; input objects keep their strictness).
 */
function lean(node: unknown, io: 'input' | 'output'): unknown {
  if (Array.isArray(node)) return node.map((n) => lean(n, io));
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (key === '$schema') continue;
    if ((key === 'minimum' && value === -SAFE_INTEGER) || (key === 'maximum' && value === SAFE_INTEGER))
      continue;
    if (io === 'output' && key === 'additionalProperties' && value === false) continue;
    out[key] = lean(value, io);
  }
  return out;
}

/** A tool schema as JSON Schema, leaned. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> & { type: 'object' } {
  return lean(z.toJSONSchema(schema, { io, unrepresentable: 'any' }), io) as Record<string, unknown> & {
    type: 'object';
  };
}

/** Precomputes listings and JSON schemas; rejects duplicate names. */
export function createCatalog(tools: readonly AnyTool[]): ToolCatalog {
  const byName = new Map<string, AnyTool>();
  const listings = new Map<string, ToolListing>();
  for (const tool of tools) {
    if (byName.has(tool.name)) throw new Error(`two tools are named ${tool.name}`);
    byName.set(tool.name, tool);
    listings.set(tool.name, {
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: jsonSchema(tool.input, 'input'),
      // A gated tool's call answers pending_approval; its own output comes later, from get_approval_status.
      ...(tool.approval
        ? { outputSchema: jsonSchema(pendingApprovalOutput, 'output') }
        : tool.output
          ? { outputSchema: jsonSchema(tool.output, 'output') }
          : {}),
      annotations: { title: tool.title, ...tool.annotations },
      ...(tool.icons ? { icons: tool.icons } : {}),
    });
  }
  const scopes = [...new Set(tools.map((t) => t.scope))].sort();
  const cache = new Map<string, ToolListing[]>();
  return {
    tools,
    byName,
    listings,
    scopes,
    visible(granted) {
      const key = [...granted].sort().join(' ');
      let list = cache.get(key);
      if (!list) {
        const set = new Set(granted);
        list = tools.filter((t) => set.has(t.scope)).map((t) => listings.get(t.name)!);
        cache.set(key, list);
      }
      return list;
    },
  };
}
