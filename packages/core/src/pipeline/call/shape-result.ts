import type { CallToolResult } from '@modelcontextprotocol/server';
import type { AnyTool } from '../tool-definition/define-tool.ts';
import { scanUntrusted } from '../text-safety/untrusted/detect.ts';
import { renderText } from '../text-safety/untrusted/render.ts';

/** A handler's value turned into what the client gets, plus what the audit log keeps of it. */
export interface ShapedResult {
  result: CallToolResult;
  summary: Record<string, unknown>;
  injectionSuspected: boolean;
}

/**
 * Text content for every client, `structuredContent` for tools with an output
 * schema. Untrusted values (see `untrusted()`) are checked for injection and
 * rendered as delimited blocks in the text. The audit summary is small: array
 * sizes, `truncated`, `status`; the full value only when `full` is set.
 */
export function shapeResult(tool: AnyTool, value: unknown, full: boolean): ShapedResult {
  const scan = scanUntrusted(value);
  const structured = scan.value;
  const text = typeof structured === 'string' ? structured : renderText(structured);
  const result: CallToolResult = { content: [{ type: 'text', text }] };
  if (tool.output && structured && typeof structured === 'object') {
    result.structuredContent = structured as Record<string, unknown>;
  }
  const summary: Record<string, unknown> = summarise(structured);
  if (scan.suspected.length) summary.injection_suspected = scan.suspected;
  if (full) summary.result = structured;
  return { result, summary, injectionSuspected: scan.suspected.length > 0 };
}

function summarise(value: unknown): Record<string, unknown> {
  if (typeof value === 'string') return { chars: value.length };
  if (!value || typeof value !== 'object') return {};
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (Array.isArray(v)) out[`${key}_count`] = v.length;
    else if (
      key === 'truncated' ||
      key === 'status' ||
      key === 'count' ||
      key === 'total' ||
      key === 'approval_id'
    )
      out[key] = v;
  }
  return out;
}
