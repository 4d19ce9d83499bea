import { createHash } from 'node:crypto';
import type { z } from 'zod';

const secrets = new WeakSet<z.ZodType>();

/**
 * Marks a field as secret: the audit log and the logs record a hash of its
 * value, never the value. `input: z.object({ iban: secret(z.string()) })`.
 */
export function secret<T extends z.ZodType>(schema: T): T {
  secrets.add(schema);
  return schema;
}

function isSecret(schema: z.ZodType): boolean {
  let node: z.ZodType | undefined = schema;
  for (let i = 0; node && i < 5; i++) {
    if (secrets.has(node)) return true;
    const def: { innerType?: z.ZodType } = (node as unknown as { _zod: { def: { innerType?: z.ZodType } } })
      ._zod.def;
    node = def.innerType;
  }
  return false;
}

/** The hash recorded in place of a secret value. */
export function secretHash(value: unknown): string {
  return `sha256:${createHash('sha256')
    .update(JSON.stringify(value) ?? 'undefined')
    .digest('hex')}`;
}

/** A copy of `args` with every field that `input` marks secret replaced by its hash (nested objects too). */
export function redactArguments(input: z.ZodObject, args: unknown): unknown {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return args;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args as Record<string, unknown>)) {
    const field = input.shape[key] as z.ZodType | undefined;
    if (field && isSecret(field)) out[key] = secretHash(value);
    else if (field && isObject(field)) out[key] = redactArguments(unwrap(field) as z.ZodObject, value);
    else out[key] = value;
  }
  return out;
}

function unwrap(schema: z.ZodType): z.ZodType {
  let node = schema;
  for (let i = 0; i < 5; i++) {
    const inner = (node as unknown as { _zod: { def: { innerType?: z.ZodType } } })._zod.def.innerType;
    if (!inner) break;
    node = inner;
  }
  return node;
}

function isObject(schema: z.ZodType): boolean {
  return (unwrap(schema) as unknown as { _zod: { def: { type: string } } })._zod.def.type === 'object';
}
