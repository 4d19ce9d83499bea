import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { UntrustedText } from '../text-safety/untrusted/wrap.ts';

/**
 * A failure the model can act on: its message is shown to the client as an
 * `isError` result, so it must say what went wrong and what to do instead
 * ("customer C-9999 not found — check the customer number").
 */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  /**
   * Text from outside that the sentence refers to (an upstream's error body): the model gets it only
   * as untrusted text, after the sentence, never inside it.
   */
  readonly quoted: UntrustedText | undefined;
  constructor(message: string, options: { quoted?: UntrustedText | undefined } = {}) {
    super(message);
    this.quoted = options.quoted;
  }
}

/**
 * An unexpected failure as a client is told it: a fresh incident id, under which the detail goes to the
 * log, in the one sentence every path says, then `rest` (what the path adds: "." by default).
 */
export function internalError(rest = '.'): { incident: string; text: string } {
  const incident = randomUUID().slice(0, 8);
  return { incident, text: `Internal error, incident ${incident}${rest}` };
}

function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  let json: string;
  try {
    json = JSON.stringify(value);
  } catch {
    // Nested deeper than the stack allows: the shape is all that can be shown.
    json = Array.isArray(value) ? '[...]' : '{...}';
  }
  return json.length > 80 ? `${json.slice(0, 77)}...` : json;
}

function at(args: unknown, path: PropertyKey[]): unknown {
  let node: unknown = args;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

function expected(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_value':
      return `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'invalid_type':
      return `a value of type ${issue.expected}`;
    case 'too_small':
      return issue.origin === 'string'
        ? `at least ${String(issue.minimum)} characters`
        : issue.origin === 'array'
          ? `at least ${String(issue.minimum)} items`
          : `a number ${issue.inclusive ? '>=' : '>'} ${String(issue.minimum)}`;
    case 'too_big':
      return issue.origin === 'string'
        ? `at most ${String(issue.maximum)} characters`
        : issue.origin === 'array'
          ? `at most ${String(issue.maximum)} items`
          : `a number ${issue.inclusive ? '<=' : '<'} ${String(issue.maximum)}`;
    case 'invalid_format':
      return issue.format === 'regex' && 'pattern' in issue
        ? `a value matching ${String(issue.pattern)}`
        : `a valid ${issue.format}`;
    case 'unrecognized_keys':
      return `no such field (${issue.keys.join(', ')} not accepted)`;
    default:
      return issue.message;
  }
}

/**
 * Turns a zod error into one sentence per problem naming the field, the value
 * given and what would have been valid, e.g.
 * `category: got "urgent", expected one of "question", "incident"`.
 */
export function formatIssues(error: z.ZodError, args: unknown): string {
  const lines = error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys') {
      // Named up to ten, so that a flood of unknown keys cannot flood the answer (and the audit log).
      const named = issue.keys.slice(0, 10).map((k) => describe(k));
      const more = issue.keys.length - named.length;
      const list = more ? `${named.join(', ')} and ${more.toLocaleString('en-US')} more` : named.join(', ');
      return `${list}: not an argument of this tool; remove ${issue.keys.length > 1 ? 'them' : 'it'}`;
    }
    const field = issue.path.length ? issue.path.map(String).join('.') : '(arguments)';
    return `${field}: got ${describe(at(args, issue.path))}, expected ${expected(issue)}`;
  });
  return `Invalid arguments — ${lines.join('; ')}. Nothing was done; call again with corrected arguments.`;
}
