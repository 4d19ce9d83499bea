import { ProtocolError, type CallToolResult, type Client } from '@modelcontextprotocol/client';
import { ToolError } from '../tool-definition/errors.ts';
import { untrusted, type UntrustedText } from '../text-safety/untrusted/wrap.ts';
import type { ProgressReporter } from '../call/progress.ts';
import type { UpstreamRecord } from '../upstream/upstreams.ts';
import { McpUpstreamDown } from './connection.ts';
import type { McpUpstreams } from './upstreams.ts';

/**
 * How long a call waits for an upstream that is still connecting (a child that is starting): longer
 * than any tool's time limit, which ends the wait first (and answers that the call ran out of time).
 */
const CONNECT_WAIT_MS = 120_000;

/** A handler's way to one declared upstream MCP server (`ctx.mcpUpstream(name)`). */
export interface McpUpstreamClient {
  /**
   * Calls `tool` on the upstream with `args`: the call's time limit and cancellation reach it as
   * `notifications/cancelled`, its progress becomes the call's, and it is recorded in the call's event.
   * Everything the upstream says comes back as untrusted text; an upstream error or an upstream that
   * is down is a {@link ToolError} naming it.
   */
  callTool(tool: string, args: Record<string, unknown>): Promise<McpAnswer>;
}

/** What a forwarded call returns to the model: every text of the upstream as untrusted text. */
export interface McpAnswer {
  upstream: string;
  tool: string;
  content: (UntrustedText | { type: string; mimeType?: string; note: string })[];
  structured?: UntrustedText;
}

/** What a forwarded call needs from its run: its signal, where progress and records go. */
export interface McpCallContext {
  signal: AbortSignal;
  progress: ProgressReporter;
  records: UpstreamRecord[];
  /** Called with each finished call (for `/metrics`). */
  recorded?: (record: UpstreamRecord) => void;
}

/** `text` with every secret of the upstream replaced, for a record or a log line. */
function masked(text: string, secrets: readonly string[]): string {
  return secrets.reduce((t, s) => (s ? t.replaceAll(s, '[secret]') : t), text);
}

/** The upstream's result as the model gets it: texts and resources as untrusted text, media by their type. */
export function mcpAnswer(upstream: string, tool: string, result: CallToolResult): McpAnswer {
  const source = `upstream ${upstream}, tool ${tool}`;
  const content = result.content.map((block) => {
    if (block.type === 'text') return untrusted(block.text, { source });
    if (block.type === 'resource_link')
      return untrusted(`${block.name}: ${block.uri}`, { source: `${source}, link` });
    if (block.type === 'resource' && 'text' in block.resource)
      return untrusted(block.resource.text, { source: `${source}, ${block.resource.uri}` });
    const mimeType = 'mimeType' in block && typeof block.mimeType === 'string' ? block.mimeType : undefined;
    return { type: block.type, ...(mimeType ? { mimeType } : {}), note: 'binary content, not passed on' };
  });
  return {
    upstream,
    tool,
    content,
    ...(result.structuredContent
      ? {
          structured: untrusted(JSON.stringify(result.structuredContent), {
            source: `${source}, structured`,
          }),
        }
      : {}),
  };
}

/** The client of the declared upstream `name`; an undeclared name throws. */
export function createMcpUpstreamClient(
  upstreams: McpUpstreams | undefined,
  name: string,
  ctx: McpCallContext,
): McpUpstreamClient {
  const connection = upstreams?.byName.get(name);
  if (!connection) throw new Error(`upstream MCP server "${name}" is not declared (bulkhead.mcpUpstream)`);
  const { title, secrets } = connection.config;
  return {
    async callTool(tool, args) {
      const started = performance.now();
      const record: UpstreamRecord = {
        upstream: name,
        method: 'tools/call',
        path_template: tool,
        path: tool,
        attempt: 1,
        status: null,
        bytes: 0,
        ms: 0,
      };
      const done = (error?: string) => {
        record.ms = Math.round(performance.now() - started);
        if (error) record.error = masked(error, secrets).slice(0, 300);
        ctx.records.push(record);
        ctx.recorded?.(record);
      };
      let result: CallToolResult;
      let client: Client | undefined;
      try {
        client = await connection.client(CONNECT_WAIT_MS);
        result = await client.callTool(
          { name: tool, arguments: args },
          {
            signal: ctx.signal,
            // The kit's time limit governs (it aborts `signal`): the SDK's own default must not come first.
            timeout: 2_147_483_647,
            onprogress: (p) => ctx.progress(p.progress, p.total, p.message),
          },
        );
      } catch (err) {
        done(err instanceof Error ? err.message : String(err));
        if (ctx.signal.aborted) throw err;
        if (err instanceof McpUpstreamDown)
          throw new ToolError(
            `the upstream MCP server ${name} (${title}) is not reachable, so ${tool} was not sent; try again in a minute, and tell an operator if it stays down`,
          );
        if (err instanceof ProtocolError)
          throw new ToolError(
            `the upstream MCP server ${name} (${title}) refused ${tool}; its reason is quoted below`,
            {
              quoted: untrusted(masked(err.message, secrets), { source: `upstream ${name}, error` }),
            },
          );
        // The connection broke under the call (a child that died, a session or socket gone): made again.
        if (client) connection.failed(client, err);
        throw new ToolError(
          `the upstream MCP server ${name} (${title}) is not reachable: the connection failed during ${tool}, which got no answer; try again in a minute, and tell an operator if it stays down`,
        );
      }
      record.bytes = JSON.stringify(result).length;
      done(result.isError ? 'the upstream answered isError' : undefined);
      const answer = mcpAnswer(name, tool, result);
      if (result.isError)
        throw new ToolError(
          `the upstream MCP server ${name} (${title}) answered that ${tool} failed; its words are quoted below`,
          {
            quoted: untrusted(answer.content.map((c) => ('text' in c ? c.text : c.note)).join('\n'), {
              source: `upstream ${name}, tool ${tool}, error`,
            }),
          },
        );
      return answer;
    },
  };
}
