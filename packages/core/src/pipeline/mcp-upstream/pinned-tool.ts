import { z } from 'zod';
import { compileModelPattern } from '../text-safety/model-pattern.ts';
import { quoted } from '../text-safety/quoted.ts';
import { defineTool, type AnyTool, type ToolAnnotations } from '../tool-definition/define-tool.ts';
import type { PinnedTool } from './pins.ts';

/** The outbox kind of a gated call to an upstream MCP server, sent after approval, at most once. */
export const MCP_UPSTREAM_EFFECT = 'mcp_upstream';

/** What an approved call to an upstream MCP server queues: delivered by the approvals' deliverer. */
export const mcpUpstreamEffectSchema = z
  .object({
    upstream: z.string().min(1),
    tool: z.string().min(1),
    arguments: z.record(z.string(), z.unknown()),
  })
  .strict();

/** The annotations MCP assumes of a tool that states none: it may write, destroy, repeat badly and reach out. */
const MCP_DEFAULTS: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
};

/** How the kit serves a pinned tool. */
export interface PinnedToolOptions {
  /** The upstream's name (`bulkhead.mcpUpstream.name`). */
  upstream: string;
  /** The scope of the tools the upstream marks read-only, and of every other one. */
  readScope: string;
  writeScope: string;
  /** Whether a call waits for a person; default: unless the upstream marks the tool read-only. */
  gated?: boolean;
  timeoutMs?: number;
}

/** The name a pinned tool is served under: the upstream's, in the kit's snake_case (`get-sum` → `get_sum`). */
export function servedName(upstreamName: string): string {
  const name = upstreamName
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return /^[a-z]/.test(name) ? name.slice(0, 64) : `t_${name}`.slice(0, 64);
}

/** The upstream's annotations with MCP's defaults for what it left out (only booleans are taken). */
export function pinnedAnnotations(pin: PinnedTool): ToolAnnotations {
  const given = pin.annotations ?? {};
  const out = { ...MCP_DEFAULTS };
  for (const hint of Object.keys(MCP_DEFAULTS) as (keyof ToolAnnotations)[])
    if (typeof given[hint] === 'boolean') out[hint] = given[hint];
  return out;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The schema without its `pattern`s, which zod would compile as JavaScript regular expressions: an
 * upstream's pattern that backtracks badly would let a model's argument freeze the process. Each is
 * compiled for the linear-time engine instead (refused at start-up when it cannot be), and checked on
 * the values it governs (properties and array items, as the schema nests them).
 */
function withoutPatterns(schema: unknown): { schema: unknown; check: (value: unknown) => string | null } {
  if (Array.isArray(schema)) {
    const parts = schema.map(withoutPatterns);
    return { schema: parts.map((p) => p.schema), check: () => null };
  }
  if (!isObject(schema)) return { schema, check: () => null };
  if ('patternProperties' in schema) throw new Error('patternProperties is not supported in a pinned schema');
  const { pattern, properties, items, ...rest } = schema;
  const own = typeof pattern === 'string' ? compileModelPattern(pattern, { maxLength: 1000 }) : null;
  const props = isObject(properties)
    ? Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, withoutPatterns(v)]))
    : null;
  const item = items === undefined ? null : withoutPatterns(items);
  const out: Json = { ...rest };
  if (props) out.properties = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, v.schema]));
  if (item) out.items = item.schema;
  return {
    schema: out,
    check(value) {
      if (own && typeof value === 'string' && !own.matchesSomewhere(value))
        return `does not match the pattern ${own.source}`;
      if (props && isObject(value))
        for (const [k, p] of Object.entries(props)) {
          const problem = p.check(value[k]);
          if (problem) return `${k} ${problem}`;
        }
      if (item && Array.isArray(value))
        for (const [i, v] of value.entries()) {
          const problem = item.check(v);
          if (problem) return `item ${i} ${problem}`;
        }
      return null;
    },
  };
}

/** The pinned input schema as a validator: arguments are checked against it before anything is sent. */
function inputOf(pin: PinnedTool): z.ZodObject {
  const { schema: plain, check } = withoutPatterns(pin.inputSchema);
  const schema = z.fromJSONSchema(plain as z.core.JSONSchema.JSONSchema);
  if (!(schema instanceof z.ZodObject))
    throw new Error(`the pinned input schema of ${pin.name} does not describe an object of named arguments`);
  return schema.superRefine((value, ctx) => {
    const problem = check(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }) as unknown as z.ZodObject;
}

/** What a person approves for a gated pinned tool: the tool, the upstream, every argument, and at most once. */
export function pinnedPreview(tool: string, upstream: string, args: Record<string, unknown>): string {
  return `Call ${quoted(tool)} on the upstream MCP server ${quoted(upstream)} with the arguments ${quoted(JSON.stringify(args), 2000)}. It is sent at most once: if its delivery fails, the outcome is reported as unknown and it is not sent again.`;
}

/**
 * A pinned upstream tool as a kit tool: listed as pinned, its arguments validated against the pinned
 * schema, then forwarded (`ctx.mcpUpstream`). A tool the upstream does not mark read-only waits for a
 * person by default and, once approved, is sent from the outbox at most once: the upstream takes no
 * idempotency key, so a delivery that fails is reported as outcome unknown, never repeated blindly.
 */
export function pinnedTool(pin: PinnedTool, options: PinnedToolOptions): AnyTool {
  const annotations = pinnedAnnotations(pin);
  const gated = options.gated ?? !annotations.readOnlyHint;
  const { upstream } = options;
  return defineTool({
    name: servedName(pin.name),
    title: pin.title ?? (typeof pin.annotations?.title === 'string' ? pin.annotations.title : pin.name),
    description: pin.served?.description ?? pin.description ?? '',
    scope: gated ? options.writeScope : options.readScope,
    input: inputOf(pin),
    annotations,
    pinned: { upstream, pin },
    ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
    ...(gated
      ? {
          approval: {
            preview: (args: Record<string, unknown>) => pinnedPreview(pin.name, upstream, args),
          },
        }
      : {}),
    handler: async (args: Record<string, unknown>, ctx) => {
      if (!gated)
        return (await ctx.mcpUpstream(upstream).callTool(pin.name, args)) as unknown as Record<
          string,
          unknown
        >;
      if (!ctx.outbox) throw new Error(`${pin.name} is gated but ran outside an approved action`);
      const outboxId = await ctx.outbox.enqueue(MCP_UPSTREAM_EFFECT, {
        upstream,
        tool: pin.name,
        arguments: args,
      });
      return {
        status: 'sending',
        outbox_id: outboxId,
        note: `Sent to ${upstream} at most once, after this approval; a failed delivery shows as outcome unknown and is not repeated.`,
      };
    },
  });
}
