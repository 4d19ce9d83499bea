import { untrusted, type UpstreamResponse } from '@bulkhead/core';
import { z } from 'zod';

/**
 * What a read tool answers as `data`: any JSON value (an object, a list, a text, a number, a boolean
 * or null), each kind its own branch so that every client can read the schema.
 */
export const upstreamData = z.union([
  z.looseObject({}),
  z.array(z.unknown()),
  z.string(),
  z.number(),
  z.boolean(),
  z.null(),
]);
export type UpstreamData = z.output<typeof upstreamData>;

/**
 * The answer's JSON with every string in it marked untrusted, naming `source` (the upstream and the
 * operation): data, never instructions. A body that is not JSON comes back as one untrusted text,
 * an empty one as null.
 */
export function untrustedData(res: UpstreamResponse, source: string): UpstreamData {
  const text = res.text().text;
  if (!text) return null;
  let value: unknown;
  try {
    value = res.json();
  } catch {
    return { ...untrusted(text, { source }) };
  }
  const mark = (v: unknown): unknown => {
    if (typeof v === 'string') return untrusted(v, { source });
    if (Array.isArray(v)) return v.map(mark);
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, mark(item)]));
    return v;
  };
  // JSON in, JSON out: an object stays an object, a list a list (a text becomes an untrusted text object).
  return mark(value) as UpstreamData;
}
