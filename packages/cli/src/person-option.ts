import { personNameProblem, tidyPersonName } from '@bulkhead/core/operator';
import { UsageError } from './io.ts';

/**
 * A person's name from an option (`--owner`, `--person`), in the spelling it is stored in (NFKC,
 * without invisible characters, spaces collapsed), or null when none was given. Refuses, with the
 * reason, a name that mixes scripts or has no letter: it could pass for another person's.
 */
export function personOption(raw: string | undefined, flag: string): string | null {
  if (raw === undefined || raw.trim() === '') return null;
  const name = tidyPersonName(raw);
  const problem = personNameProblem(name);
  if (problem) throw new UsageError(`${flag}: ${problem}`);
  if (name.length > 200) throw new UsageError(`${flag}: at most 200 characters`);
  return name;
}
