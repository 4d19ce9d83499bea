import { MAX_DEPTH, MAX_JSON_CHARS } from '@bulkhead/audit';

/** Structural bounds on a tool call's `arguments` (or a request's params), checked before any schema sees them. */
export interface ArgumentLimits {
  /** Values in all (each key's value, each array element, nested ones included). */
  values: number;
  /** Levels of nesting below the top. */
  depth: number;
  /** Characters of keys and strings together. */
  chars: number;
}

/**
 * Far above any tool's real arguments (the largest free text a tool takes is 5,000 characters; no
 * tool takes more than a dozen fields), far below what costs the server: a 60,000-key object took
 * seconds to refuse through the schema. The depth and size are the audit log's own bounds.
 */
export const ARGUMENT_LIMITS: ArgumentLimits = { values: 1_000, depth: MAX_DEPTH, chars: MAX_JSON_CHARS };

/** What passed a bound: under which top-level key (null: the top level itself holds too many), and how. */
export interface OverLimit {
  field: string | null;
  problem: string;
}

/**
 * What makes `value` too large for the limits, or null. A walk that stops at the first bound it
 * passes, so it costs at most `values` steps whatever was sent, and copies nothing. Each top-level
 * key's value is walked in turn, so the first whose value passes a bound is the one named.
 */
export function argumentsOverLimit(
  value: unknown,
  limits: ArgumentLimits = ARGUMENT_LIMITS,
): OverLimit | null {
  if (value === null || typeof value !== 'object') return null;
  const budget = { values: 0, chars: 0 };
  if (Array.isArray(value)) {
    if (value.length > limits.values) return { field: null, problem: `more than ${limits.values} values` };
    for (let i = 0; i < value.length; i++) {
      budget.values++;
      const problem = walk(value[i], 1, budget, limits);
      if (problem) return { field: String(i), problem };
    }
    return null;
  }
  for (const key in value) {
    if (++budget.values > limits.values) return { field: null, problem: `more than ${limits.values} values` };
    budget.chars += key.length;
    const problem = walk((value as Record<string, unknown>)[key], 1, budget, limits);
    if (problem) return { field: key, problem };
  }
  return null;
}

/** Walks one value below the top, spending `budget`; what passed a bound, or null. */
function walk(
  root: unknown,
  rootDepth: number,
  budget: { values: number; chars: number },
  limits: ArgumentLimits,
): string | null {
  const stack: [unknown, number][] = [[root, rootDepth]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'string') budget.chars += value.length;
    if (budget.chars > limits.chars) return `more than ${limits.chars} characters of text`;
    if (value === null || typeof value !== 'object') continue;
    if (depth >= limits.depth) return `nested deeper than ${limits.depth} levels`;
    if (Array.isArray(value)) {
      for (const item of value) {
        if (++budget.values > limits.values) return `more than ${limits.values} values`;
        stack.push([item, depth + 1]);
      }
      continue;
    }
    for (const key in value) {
      if (++budget.values > limits.values) return `more than ${limits.values} values`;
      budget.chars += key.length;
      stack.push([(value as Record<string, unknown>)[key], depth + 1]);
    }
  }
  return null;
}
