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

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> & { type: 'object' } {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest as Record<string, unknown> & { type: 'object' };
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
