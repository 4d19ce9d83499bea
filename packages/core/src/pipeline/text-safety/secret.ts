import { createHash } from 'node:crypto';
import type { z } from 'zod';

const secrets = new WeakSet<object>();

/**
 * Marks a field as secret: the audit log and the logs record a hash of its
 * value, never the value. `input: z.object({ iban: secret(z.string()) })`.
 * Schemas derived from a marked one (`secret(z.string()).min(8)`) stay secret.
 */
export function secret<T extends z.ZodType>(schema: T): T {
  secrets.add(schema);
  return schema;
}

interface Internals {
  _zod: {
    parent?: object;
    def: {
      type: string;
      innerType?: object;
      element?: object;
      options?: object[];
      in?: object;
      out?: object;
      shape?: Record<string, object>;
    };
  };
}

const internals = (schema: object) => (schema as Internals)._zod;

/** Marked directly, or derived from a marked schema (zod links each derived schema to its parent). */
function isSecret(schema: object): boolean {
  for (let node: object | undefined = schema, i = 0; node && i < 50; node = internals(node).parent, i++) {
    if (secrets.has(node)) return true;
  }
  return false;
}

/** The hash recorded in place of a secret value. */
export function secretHash(value: unknown): string {
  return `sha256:${createHash('sha256')
    .update(JSON.stringify(value) ?? 'undefined')
    .digest('hex')}`;
}

/**
 * A copy of `value` with every part that `schema` marks secret replaced by
 * `replace(value)` — through optional/nullable/default wrappers, pipes,
 * objects, arrays and unions (a union member that is secret makes the value
 * secret, since which member matched is unknown here).
 */
export function redactWith(
  schema: object,
  value: unknown,
  replace: (secretValue: unknown) => unknown,
  depth = 0,
): unknown {
  if (value === undefined || depth > 20) return value;
  if (isSecret(schema)) return replace(value);
  const def = internals(schema).def;
  if (def.innerType) return redactWith(def.innerType, value, replace, depth + 1);
  if (def.type === 'pipe' && def.in) return redactWith(def.in, value, replace, depth + 1);
  if (def.type === 'union' && def.options) {
    return def.options.some((o) => containsSecret(o, 0)) ? replace(value) : value;
  }
  if (def.type === 'array' && def.element && Array.isArray(value)) {
    return value.map((v) => redactWith(def.element!, v, replace, depth + 1));
  }
  if (
    def.type === 'object' &&
    def.shape &&
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value)
  ) {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      // Own keys only: an argument named `constructor` or `__proto__` is no field of the schema.
      const field = Object.hasOwn(def.shape, key) ? def.shape[key] : undefined;
      out[key] = field ? redactWith(field, v, replace, depth + 1) : v;
    }
    return out;
  }
  return value;
}

function containsSecret(schema: object, depth: number): boolean {
  if (depth > 20) return false;
  if (isSecret(schema)) return true;
  const def = internals(schema).def;
  const children = [
    def.innerType,
    def.element,
    def.in,
    ...(def.options ?? []),
    ...Object.values(def.shape ?? {}),
  ].filter((c): c is object => Boolean(c));
  return children.some((c) => containsSecret(c, depth + 1));
}

/** A copy of `args` with every field that `input` marks secret replaced by its hash: what the audit log records. */
export function redactArguments(input: z.ZodObject, args: unknown): unknown {
  return redactWith(input, args, secretHash);
}

/** A copy of `args` fit for an error message: secret values are named, not shown. */
export function maskSecrets(input: z.ZodObject, args: unknown): unknown {
  return redactWith(input, args, () => '(secret value, not shown)');
}
