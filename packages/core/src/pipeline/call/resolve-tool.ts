import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { AnyTool } from '../tool-definition/define-tool.ts';
import type { CallKit, CallRequest } from './call-tool.ts';
import type { CallRecord } from './record-call.ts';

/**
 * The tool a call names, if this client may call it: known, within the token's scopes, and not
 * switched off. Any other is an unknown tool, as in the client's tools/list: its event keeps only the
 * argument names, and the client gets JSON-RPC -32602.
 */
export async function resolveTool(
  kit: CallKit<unknown>,
  req: CallRequest,
  name: string,
  named: AnyTool | undefined,
  rec: CallRecord,
): Promise<AnyTool> {
  const off = kit.switchedOff ? await kit.switchedOff.names() : undefined;
  if (named && req.access.scopes.includes(named.scope) && !off?.has(name)) return named;
  // A tool outside the token's scopes, or switched off, does not exist for this client, as in its tools/list.
  const names =
    req.arguments && typeof req.arguments === 'object' ? Object.keys(req.arguments).slice(0, 50) : [];
  await rec.sink
    .append(rec.event('unknown_tool', { resultSummary: { argument_names: names } }))
    .catch((err: unknown) => rec.logger.error({ err }, 'audit event could not be written'));
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name.slice(0, 200)}`);
}
