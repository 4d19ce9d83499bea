import { z } from 'zod';
import type { AnyTool } from './define-tool.ts';
import { untrustedTextSchema } from '../text-safety/untrusted/wrap.ts';

/** The tools/list entry of one tool, computed once per process. */
export interface ToolListing {
  name: string;
  description: string;
  inputSchema: Record<string, unknown> & { type: 'object' };
  outputSchema?: Record<string, unknown> & { type: 'object' };
  annotations: AnyTool['annotations'] & { title: string };
  icons?: AnyTool['icons'];
  /** A gated tool may be called as a task (2025-11-25; the 2026-07-28 wire drops the field). */
  execution?: { taskSupport: 'optional' };
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
type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keys of a schema whose value maps names to schemas (a property named `description` is not a description). */
const NAMED = new Set(['properties', 'patternProperties', '$defs', 'definitions']);

/**
 * Walks a schema, giving `visit` every subschema (never a `properties` map
 * itself), children first; what `visit` returns replaces the node.
 */
function mapSchema(node: unknown, visit: (schema: Json) => unknown): unknown {
  if (Array.isArray(node)) return node.map((n) => mapSchema(n, visit));
  if (!isObject(node)) return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (NAMED.has(key) && isObject(value))
      out[key] = Object.fromEntries(Object.entries(value).map(([name, s]) => [name, mapSchema(s, visit)]));
    else if (key === 'enum' || key === 'const' || key === 'default' || key === 'examples') out[key] = value;
    else out[key] = mapSchema(value, visit);
  }
  return visit(out);
}

/**
 * Drops what costs characters on every tools/list and tells a client nothing:
 * zod's default integer bounds (±2^53-1), and `additionalProperties: false`
 * (a client validating a result needs the fields, not a ban on extra ones, and
 * the kit refuses an unknown argument by name, with a sentence, schema or not).
 * And writes what zod spells unportably in the portable form of the same schema
 * (the MCP Inspector's schema-portability checks, which `lintTools` makes too):
 * a list of types (`.nullable()`: `type: ["string", "null"]`) as `anyOf` branches
 * of one type each, and `additionalProperties: {}` (`z.looseObject`, `z.record`
 * of `z.unknown()`) as `true`, and `items: {}` (`z.array(z.unknown())`) as no `items`.
 */
function lean(schema: unknown): unknown {
  return mapSchema(schema, (node) => {
    const out: Json = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === '$schema') continue;
      if ((key === 'minimum' && value === -SAFE_INTEGER) || (key === 'maximum' && value === SAFE_INTEGER))
        continue;
      // The server refuses unknown arguments by name whatever the schema says; the flag would cost every tool.
      if (key === 'additionalProperties' && value === false) continue;
      if (key === 'additionalProperties' && isObject(value) && Object.keys(value).length === 0) {
        out[key] = true;
        continue;
      }
      // `items: {}` (`z.array(z.unknown())`) says what no `items` says: a list of anything.
      if (key === 'items' && isObject(value) && Object.keys(value).length === 0) continue;
      if (key === 'type' && Array.isArray(value) && !('anyOf' in node)) {
        out.anyOf = value.map((type: unknown) => ({ type }));
        continue;
      }
      out[key] = value;
    }
    return out;
  });
}

/** `#/$defs/x` references replaced by what they name (the kit's output schemas have no recursive ones). */
function inlineDefs(schema: Json): Json {
  const defs = isObject(schema.$defs) ? schema.$defs : {};
  const resolve = (node: unknown): unknown =>
    mapSchema(node, (s) => {
      const ref = typeof s.$ref === 'string' ? /^#\/\$defs\/(.+)$/.exec(s.$ref)?.[1] : undefined;
      if (!ref || !(ref in defs)) return s;
      const { $ref: _ref, ...rest } = s;
      return { ...(resolve(defs[ref]) as Json), ...rest };
    });
  const { $defs: _defs, ...rest } = schema;
  return resolve(rest) as Json;
}

/**
 * An output schema as a client needs it to read a result: every field with its
 * type, which fields are always there (`required`) and the values an enum field
 * takes. Descriptions and titles are dropped: no model reads an output schema
 * (the tool description says what comes back).
 */
function withoutWords(schema: unknown): unknown {
  return mapSchema(schema, (node) => {
    const out: Json = {};
    for (const [key, value] of Object.entries(node)) {
      if (['description', 'title', 'examples'].includes(key)) continue;
      if (key === 'type' && 'const' in node) continue; // the constant says it
      out[key] = value;
    }
    return out;
  });
}

const stable = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    isObject(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b))) : x,
  );
const UNTRUSTED = withoutWords(lean(z.toJSONSchema(untrustedTextSchema, { io: 'output' }))) as Json;
const UNTRUSTED_KEY = stable(UNTRUSTED);
const NULL_KEY = stable({ type: 'null' });

/**
 * The untrusted-text shape once per output schema, as `$defs.untrusted`,
 * referenced wherever a field carries database text: a ticket has a dozen such
 * fields, and spelled out each time they would be most of its listing. A field
 * that may also be null refers to `$defs.untrusted_or_null` where that is
 * shorter than spelling out its `anyOf` (a schema with several such fields).
 */
function shareUntrusted(schema: Json): Json {
  const plain = stable({ $ref: '#/$defs/untrusted' });
  const share = (nullableDef: boolean): Json => {
    const out = mapSchema(schema, (node) => {
      if (stable(node) === UNTRUSTED_KEY) return { $ref: '#/$defs/untrusted' };
      const anyOf = Array.isArray(node.anyOf) ? (node.anyOf as unknown[]).map(stable) : [];
      if (
        nullableDef &&
        Object.keys(node).length === 1 &&
        anyOf.length === 2 &&
        anyOf.includes(plain) &&
        anyOf.includes(NULL_KEY)
      )
        return { $ref: '#/$defs/untrusted_or_null' };
      return node;
    }) as Json;
    const text = JSON.stringify(out);
    const nullable = text.includes('"#/$defs/untrusted_or_null"');
    if (!nullable && !text.includes('"#/$defs/untrusted"')) return out;
    return {
      ...out,
      $defs: {
        untrusted: UNTRUSTED,
        ...(nullable
          ? { untrusted_or_null: { anyOf: [{ $ref: '#/$defs/untrusted' }, { type: 'null' }] } }
          : {}),
      },
    };
  };
  const shared = share(true);
  const inline = share(false);
  return JSON.stringify(inline).length <= JSON.stringify(shared).length ? inline : shared;
}

/** A tool schema as JSON Schema, leaned; output schemas also compacted (words dropped, untrusted text shared). */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> & { type: 'object' } {
  const json = lean(z.toJSONSchema(schema, { io, unrepresentable: 'any' })) as Json;
  return (io === 'input' ? json : shareUntrusted(withoutWords(inlineDefs(json)) as Json)) as Json & {
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
      description: tool.description,
      // A pinned upstream tool is listed with the input schema the upstream gave (and its pin was reviewed with).
      inputSchema: tool.pinned
        ? (tool.pinned.pin.inputSchema as Json & { type: 'object' })
        : jsonSchema(tool.input, 'input'),
      // A gated tool advertises no output schema: its call answers the kit's pending_approval envelope
      // (explained in its description and the answer's note), or, called as a task on the 2026-07-28
      // wire, a task with no structured content at all; and an SDK client refuses any answer without
      // structured content from a tool whose listing has an output schema (tasks.test.ts shows it).
      // Its own output comes later, from get_approval_status, whose schema says what `result` holds.
      ...(tool.output && !tool.approval ? { outputSchema: jsonSchema(tool.output, 'output') } : {}),
      // The display name goes where the spec has long had it, annotations.title: clients show it
      // (title, else annotations.title, else name), and models are never shown either, so the words
      // are not spent on the part of the listing that a model reads.
      annotations: { title: tool.title, ...tool.annotations },
      ...(tool.icons ? { icons: tool.icons } : {}),
      // A 2025-11-25 client calls a tool as a task only where the listing allows it; a gated call
      // is the one that waits (for a person), so it is the one a task can follow.
      ...(tool.approval ? { execution: { taskSupport: 'optional' as const } } : {}),
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
