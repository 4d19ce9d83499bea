// `new server --from-mcp`: an upstream MCP server's tools, listed with what Bulkhead would make of them
// (read or gated, the linter's findings on each), so that an author chooses the tools to pin.

import { pinnedAnnotations, type McpUpstreamConfig } from '@bulkhead/core';
import { UsageError } from '../io.ts';
import { chosenTools, lintUpstream, listUpstream } from '../mcp-upstream.ts';
import type { McpDraft } from './mcp-templates.ts';

/**
 * The upstream `source` names: a Streamable HTTP URL (its `--header Name=VARIABLE` sent with the value
 * of that variable), or a command and its arguments, split at spaces (no shell quoting), run over stdio.
 */
export function mcpSource(
  source: string,
  header: string | undefined,
  env: Record<string, string | undefined>,
): McpUpstreamConfig {
  const name = 'upstream';
  if (/^https?:\/\//i.test(source)) {
    const headers: Record<string, string> = {};
    const secrets: string[] = [];
    if (header !== undefined) {
      const m = /^([A-Za-z0-9-]{1,64})=([A-Z_][A-Z0-9_]*)$/.exec(header);
      if (!m) throw new UsageError('--header: <Header-Name>=<VARIABLE>, e.g. Authorization=FILES_TOKEN');
      const value = env[m[2]!];
      if (!value) throw new UsageError(`--header: ${m[2]} is not set`);
      headers[m[1]!] = value;
      secrets.push(value);
    }
    return {
      name,
      title: new URL(source).host,
      transport: { type: 'http', url: new URL(source), headers },
      secrets,
    };
  }
  if (header !== undefined) throw new UsageError('--header is sent only to a URL given with --from-mcp');
  const [command, ...args] = source.trim().split(/\s+/);
  if (!command) throw new UsageError('--from-mcp: a command (with its arguments) or an http(s) URL');
  const base: Record<string, string> = env.PATH ? { PATH: env.PATH } : {};
  return { name, title: command, transport: { type: 'stdio', command, args, env: base }, secrets: [] };
}

/** One upstream tool as the listing shows it. */
export interface McpToolRow {
  name: string;
  title: string | null;
  description: string;
  annotations: Record<string, unknown>;
  /** Bulkhead gates a tool the upstream does not mark read-only. */
  gated: boolean;
  findings: { rule: string; path: string; message: string }[];
}

/** The upstream's tools, each with its annotations, whether it would be gated, and the linter's findings. */
export async function listMcpTools(config: McpUpstreamConfig): Promise<McpToolRow[]> {
  const tools = await listUpstream(config);
  const findings = lintUpstream(tools);
  return tools.map((t) => ({
    name: t.name,
    title: t.title ?? null,
    description: t.description ?? '',
    annotations: t.annotations ?? {},
    gated: !pinnedAnnotations(t).readOnlyHint,
    findings: findings
      .filter((f) => f.tool === t.name)
      .map(({ rule, path, message }) => ({ rule, path, message })),
  }));
}

/** The listing mode's text: a line a tool (name, read or gated, its hints, title), its findings below it. */
export function mcpListing(source: string, rows: readonly McpToolRow[]): string[] {
  const out = [`${source}: ${rows.length} tool${rows.length === 1 ? '' : 's'}.`];
  const width = Math.max(...rows.map((r) => r.name.length));
  for (const r of rows) {
    const hints = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']
      .filter((h) => typeof r.annotations[h] === 'boolean')
      .map((h) => `${h.replace('Hint', '')}=${String(r.annotations[h])}`)
      .join(' ');
    out.push(
      `  ${r.name.padEnd(width)}  ${r.gated ? 'gated' : 'read '}  ${hints || 'no annotations'}  ${r.title ?? ''}`.trimEnd(),
    );
    for (const f of r.findings) out.push(`  ${''.padEnd(width)}    lint ${f.rule} (${f.path}): ${f.message}`);
  }
  return out;
}

/**
 * `bulkhead.mcpUpstream` of a new server named `name` for the upstream `source` names: its command and
 * arguments, or its URL and the variable its header's value comes from (never the value itself).
 */
export function mcpManifest(source: string, header: string | undefined, name: string): McpDraft['upstream'] {
  if (/^https?:\/\//i.test(source)) {
    const m = header === undefined ? null : /^([A-Za-z0-9-]{1,64})=([A-Z_][A-Z0-9_]*)$/.exec(header);
    return { name, url: source, ...(m ? { header: { name: m[1]!, env: m[2]! } } : {}) };
  }
  const [command, ...args] = source.trim().split(/\s+/);
  return { name, command: command!, args };
}

/**
 * The pins of the tools `names` chooses, as the upstream lists them now (the others named, so that one
 * it lists later is known to be new), and the manifest entry that reaches it. The linter's findings are
 * measured later, on the drafted server.
 */
export async function draftMcp(
  source: string,
  header: string | undefined,
  env: Record<string, string | undefined>,
  name: string,
  names: readonly string[],
): Promise<McpDraft> {
  const live = await listUpstream(mcpSource(source, header, env));
  const tools = chosenTools(live, names);
  const others = live.map((t) => t.name).filter((n) => !tools.some((t) => t.name === n));
  return {
    upstream: mcpManifest(source, header, name),
    pins: { upstream: name, tools, others },
    findings: [],
  };
}
