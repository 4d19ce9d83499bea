import type { z } from 'zod';
import { textArgumentError } from '../text-safety/argument-text.ts';
import { maskSecrets } from '../text-safety/secret.ts';
import type { AnyTool } from '../tool-definition/define-tool.ts';
import { formatIssues } from '../tool-definition/errors.ts';
import { ARGUMENT_LIMITS, type OverLimit } from './argument-limits.ts';

/** The parsed arguments of a call, or what is wrong with them (a refusal's text). */
export function validArguments(
  tool: AnyTool,
  given: unknown,
  oversized: OverLimit | null,
): { value: unknown } | string {
  const args = given ?? {};
  const invalid = (what: string) =>
    `Invalid arguments — ${what}. Nothing was done; call again with corrected arguments.`;
  if (typeof args !== 'object' || Array.isArray(args))
    return invalid('arguments: expected an object of named arguments');
  if (oversized) return invalid(oversizedArguments(oversized, args, tool.input));
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) return formatIssues(parsed.error, maskSecrets(tool.input, args));
  return textArgumentError(parsed.data) ?? { value: parsed.data };
}

/**
 * What an oversized call is told: the argument whose value passed a bound, or, when the arguments
 * hold too many keys of their own, the first few this tool does not have (as its schema would name them).
 */
function oversizedArguments(over: OverLimit, args: object, input: z.ZodObject): string {
  const { values, depth, chars } = ARGUMENT_LIMITS;
  const bounds = `arguments hold at most ${values} values, ${depth} levels deep and ${chars} characters of text`;
  if (over.field !== null) return `"${over.field.slice(0, 100)}": ${over.problem} (${bounds})`;
  const unknown: string[] = [];
  let count = 0;
  for (const key in args) {
    if (Object.hasOwn(input.shape, key)) continue;
    if (unknown.length < 10) unknown.push(JSON.stringify(key.slice(0, 100)));
    count++;
  }
  const more = count > unknown.length ? ` and ${(count - unknown.length).toLocaleString('en-US')} more` : '';
  return `${unknown.join(', ')}${more}: not arguments of this tool, ${over.problem} in all (${bounds}); remove them`;
}
