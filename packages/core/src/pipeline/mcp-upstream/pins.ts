// The mcp-upstream room: a bounded server in front of an MCP server nobody here wrote. pins (what the
// upstream said about its tools, hashed), connection (the supervised client), registry (the declared
// upstreams, their state and drift), pinned-tool (a pin served as a kit tool), answer (its results).
import { createHash } from 'node:crypto';
import { z } from 'zod';

const json = z.record(z.string(), z.unknown());

/** One tool as the upstream described it: the parts a model or a client acts on, and nothing else. */
export const upstreamToolSchema = z.object({
  name: z.string().min(1).max(128),
  title: z.string().optional(),
  description: z.string().optional(),
  inputSchema: json,
  outputSchema: json.optional(),
  annotations: json.optional(),
});

/** One tool as the upstream described it (see {@link upstreamToolSchema}). */
export type UpstreamTool = z.infer<typeof upstreamToolSchema>;

/**
 * A pinned tool: the upstream's definition as it was reviewed, its hash, and what the author chose to
 * show the model instead (`served.description`: the pin is what the model sees).
 */
export const pinnedToolSchema = upstreamToolSchema.extend({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  served: z
    .object({ description: z.string().min(1) })
    .strict()
    .optional(),
});

/** One pinned tool (see {@link pinnedToolSchema}). */
export type PinnedTool = z.infer<typeof pinnedToolSchema>;

/** A server's pin file (`pins.json`): the upstream it pins, and its chosen tools. */
export const pinFileSchema = z
  .object({
    upstream: z.string().min(1),
    tools: z.array(pinnedToolSchema),
    // The upstream's other tools when it was pinned: one it lists later that is in neither list is new.
    others: z.array(z.string()).default([]),
  })
  .strict();

/** A pin file (see {@link pinFileSchema}). */
export type PinFile = z.input<typeof pinFileSchema>;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON with every object's keys sorted and undefined members dropped: one text for one value. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isObject(v)
      ? Object.fromEntries(
          Object.entries(v)
            .filter(([, x]) => x !== undefined)
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/** The parts of a listing that are pinned, taken as the upstream gave them (unknown members left out). */
export function upstreamTool(listing: Record<string, unknown>): UpstreamTool {
  const { name, title, description, inputSchema, outputSchema, annotations } = listing;
  return upstreamToolSchema.parse({ name, title, description, inputSchema, outputSchema, annotations });
}

/** The sha256 (hex) of a tool's canonical JSON: name, title, description, input and output schema, annotations. */
export function pinHash(tool: UpstreamTool): string {
  const { name, title, description, inputSchema, outputSchema, annotations } = tool;
  const pinned = { name, title, description, inputSchema, outputSchema, annotations };
  return createHash('sha256').update(canonicalJson(pinned)).digest('hex');
}

/** A pin of `listing` as the upstream gives it now. */
export function pinTool(listing: Record<string, unknown>): PinnedTool {
  const tool = upstreamTool(listing);
  return { ...tool, sha256: pinHash(tool) };
}

/**
 * Reads a pin file's text. Refuses a pin whose hash does not match its definition: an edit meant for the
 * model goes into `served`, never into what the upstream said (which is compared with the live listing).
 */
export function parsePinFile(text: string, where = 'pins.json'): z.output<typeof pinFileSchema> {
  const file = pinFileSchema.parse(JSON.parse(text));
  for (const tool of file.tools)
    if (pinHash(tool) !== tool.sha256)
      throw new Error(
        `${where}: the pin of ${tool.name} does not match its sha256; edit served.description, not the upstream's text`,
      );
  return file;
}

/** A pin file's text: two-space JSON, tools in the order given, a newline at the end. */
export function formatPinFile(file: PinFile): string {
  return `${JSON.stringify(file, null, 2)}\n`;
}

/** A difference between a pinned definition and the live one, field by field, for the drift event. */
export interface PinDiff {
  field: 'title' | 'description' | 'inputSchema' | 'outputSchema' | 'annotations';
  pinned: unknown;
  live: unknown;
}

/** What changed between `pinned` and `live`, by field (empty when the hashes match). */
export function diffPin(pinned: UpstreamTool, live: UpstreamTool): PinDiff[] {
  const fields = ['title', 'description', 'inputSchema', 'outputSchema', 'annotations'] as const;
  return fields
    .filter((f) => canonicalJson(pinned[f] ?? null) !== canonicalJson(live[f] ?? null))
    .map((field) => ({ field, pinned: pinned[field] ?? null, live: live[field] ?? null }));
}
