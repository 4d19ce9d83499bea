/** Structural bounds on a tool call's `arguments`, checked before any schema sees them. */
export interface ArgumentLimits {
  /** Values in all (each key's value, each array element, nested ones included). */
  values: number;
  /** Levels of nesting below `arguments` itself. */
  depth: number;
  /** Characters of keys and strings together. */
  chars: number;
}

/**
 * Far above any tool's real arguments (the largest free text a tool takes is 5,000 characters;
 * no tool takes more than a dozen fields), far below what costs the server: a 60,000-key object
 * took seconds to refuse through the schema and was written to the audit log whole.
 */
export const ARGUMENT_LIMITS: ArgumentLimits = { values: 1_000, depth: 10, chars: 64 * 1024 };

/**
 * What makes `args` too large for the limits, or null. A walk that stops at the first bound it
 * passes, so it costs at most `values` steps whatever was sent, never a copy of the keys.
 */
export function argumentsOverLimit(args: unknown, limits: ArgumentLimits = ARGUMENT_LIMITS): string | null {
  let values = 0;
  let chars = 0;
  const stack: [unknown, number][] = [[args, 0]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'string') chars += value.length;
    if (chars > limits.chars) return `more than ${limits.chars} characters of text`;
    if (value === null || typeof value !== 'object') continue;
    if (depth >= limits.depth) return `nesting deeper than ${limits.depth} levels`;
    if (Array.isArray(value)) {
      for (const item of value) {
        if (++values > limits.values) return `more than ${limits.values} values`;
        stack.push([item, depth + 1]);
      }
      continue;
    }
    for (const key in value) {
      if (++values > limits.values) return `more than ${limits.values} values`;
      chars += key.length;
      stack.push([(value as Record<string, unknown>)[key], depth + 1]);
    }
  }
  return chars > limits.chars ? `more than ${limits.chars} characters of text` : null;
}
