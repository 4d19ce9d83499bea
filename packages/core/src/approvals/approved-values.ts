import { isDeepStrictEqual } from 'node:util';
import type { AnyTool, ApprovedValues, ToolContext } from '../pipeline/tool-definition/define-tool.ts';
import { ToolError } from '../pipeline/tool-definition/errors.ts';
import { storedForm } from './store.ts';

// "Approved" means exactly what the person saw. A gated tool's effect often uses values its arguments
// do not fix — the address on file, the amount still due, what a silence matches — and the world can
// change between the request and the run. So a gate names those values (`approval.values`): they are
// read when the call is filed, stored with the approval and shown, and read again when the approved
// action runs. The action runs only if they are the same, and the handler builds its effect from the
// stored ones.

/** The approved action was refused because a value its effect would use is not the one approved. */
export class ChangedSinceApproval extends ToolError {}

/** The values `tool`'s effect would use now, in their stored (JSON) form; null for a tool without them. */
export async function currentValues(
  tool: AnyTool,
  args: unknown,
  ctx: ToolContext,
): Promise<ApprovedValues | null> {
  const read = tool.approval?.values;
  return read ? (storedForm(await read(args, ctx)) as ApprovedValues) : null;
}

/** `a`, `a and b`, `a, b and c`. */
function wordList(words: string[]): string {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

/** The names whose values differ between `approved` and `now` (a name present in only one differs too). */
export function changedNames(approved: ApprovedValues, now: ApprovedValues): string[] {
  const names = [...new Set([...Object.keys(approved), ...Object.keys(now)])];
  return names.filter((n) => !isDeepStrictEqual(approved[n], now[n]));
}

/**
 * Reads `tool`'s values again, inside the approved action's transaction, and refuses
 * ({@link ChangedSinceApproval}) unless they equal the `approved` ones, naming what changed.
 */
export async function checkApprovedValues(
  tool: AnyTool,
  args: unknown,
  ctx: ToolContext,
  approved: unknown,
): Promise<void> {
  const now = await currentValues(tool, args, ctx);
  if (now === null) return;
  const again = `nothing was done — call ${tool.name} again so that a person approves it as it is now`;
  if (approved === null || typeof approved !== 'object')
    throw new ChangedSinceApproval(
      `this request was filed before ${tool.name} named the values its effect uses, so they were not approved; ${again}`,
    );
  const changed = changedNames(approved as ApprovedValues, now);
  if (changed.length)
    throw new ChangedSinceApproval(
      `the ${wordList(changed.map((n) => n.replaceAll('_', ' ')))} changed after approval; ${again}`,
    );
}
