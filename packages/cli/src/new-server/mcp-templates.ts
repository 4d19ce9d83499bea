// The files `bulkhead new server --from-mcp … --tool …` writes instead of the example tool: the pin
// file of the chosen tools (the format `bulkhead pins update` writes and the server reads), the list
// of tools built from it, and one test a tool against the real upstream. The TypeScript comes from the
// templates in packages/cli/templates/mcp-server/; what is computed here is each test's arguments and,
// for a gated tool, the preview a person is shown.

import {
  formatPinFile,
  pinnedAnnotations,
  pinnedPreview,
  servedName,
  type PinFile,
  type PinnedTool,
} from '@bulkhead/core';
import type { McpUpstreamManifest } from '@bulkhead/deployables';
import { fillTemplate, MCP_TEMPLATES } from './fill.ts';

/** What `--from-mcp` with `--tool` adds to a new server. */
export interface McpDraft {
  /** `bulkhead.mcpUpstream` as the manifest writes it: the command and arguments, or the URL and header variable. */
  upstream: McpUpstreamManifest & { name: string };
  /** The pin file: the chosen tools as the upstream listed them, and the names of its other tools. */
  pins: PinFile;
  /** What the linter finds in the pinned text, `<tool> <rule> <path>` (measured from the drafted server). */
  findings: string[];
}

/** One pinned tool as the server serves it. */
export interface McpToolPlan {
  pin: PinnedTool;
  /** Its name in tools/list: `toggle_simulated_logging`. */
  name: string;
  /** Its test's file, without `.test.ts`: `toggle-simulated-logging`. */
  file: string;
  /** Not marked read-only by the upstream: a person approves each call. */
  gated: boolean;
  /** What its test calls it with (and a read tool as the manifest's probe). */
  args: Record<string, unknown>;
}

/** The chosen tools as served: name, file, gate. */
export function mcpTools(draft: McpDraft): McpToolPlan[] {
  return draft.pins.tools.map((pin) => {
    const name = servedName(pin.name);
    return {
      pin,
      name,
      file: name.replaceAll('_', '-'),
      gated: !pinnedAnnotations(pin).readOnlyHint,
      args: exampleArgs(pin.inputSchema as JsonSchema),
    };
  });
}

type JsonSchema = {
  type?: string | string[];
  default?: unknown;
  examples?: unknown[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
};

/** A value the schema accepts: its default, example, constant or first allowed value, else one of its type. */
function exampleValue(schema: JsonSchema): unknown {
  if (schema.default !== undefined) return schema.default;
  if (schema.examples?.length) return schema.examples[0];
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'number':
    case 'integer':
      return schema.minimum ?? 1;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object':
      return exampleArgs(schema);
    default:
      return 'example';
  }
}

/**
 * The arguments a tool's test calls it with: each required property, and each with a default (so that
 * they read as the server validates them, defaults filled in), in the schema's order.
 */
export function exampleArgs(schema: JsonSchema): Record<string, unknown> {
  const required = new Set(schema.required ?? []);
  return Object.fromEntries(
    Object.entries(schema.properties ?? {})
      .filter(([key, p]) => required.has(key) || p.default !== undefined)
      .map(([key, p]) => [key, exampleValue(p)]),
  );
}

/** Every file the pinned tools bring, by path relative to the server's folder; `server` holds the server's own placeholders. */
export function mcpFiles(
  draft: McpDraft,
  server: Record<string, string>,
  scopes: { read: string; write: string },
): Record<string, string> {
  const values = {
    ...server,
    __READ_SCOPE__: scopes.read,
    __WRITE_SCOPE__: scopes.write,
    __FINDINGS__: JSON.stringify(draft.findings, null, 2),
  };
  const fill = (path: string, extra: Record<string, string> = {}) =>
    fillTemplate(path, { ...values, ...extra }, {}, MCP_TEMPLATES);
  const files: Record<string, string> = {
    'pins.json': formatPinFile(draft.pins),
    'src/env.ts': fill('src/env.ts'),
    'src/main.ts': fill('src/main.ts'),
    'src/server.test.ts': fill('src/server.test.ts'),
    'src/test-client.ts': fill('src/test-client.ts'),
    'src/tools/index.ts': fill('src/tools/index.ts'),
  };
  for (const t of mcpTools(draft)) {
    const { args } = t;
    files[`src/tools/${t.file}.test.ts`] = fill(
      t.gated ? 'src/tools/pinned-gated.test.ts' : 'src/tools/pinned-read.test.ts',
      {
        __TOOL_NAME__: t.name,
        __UPSTREAM__: draft.upstream.name,
        __UPSTREAM_TOOL__: t.pin.name,
        __EXAMPLE_ARGS__: JSON.stringify(args, null, 2),
        __PREVIEW_TEXT__: pinnedPreview(t.pin.name, draft.upstream.name, args),
      },
    );
  }
  return files;
}
