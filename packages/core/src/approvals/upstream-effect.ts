import { z } from 'zod';
import { createUpstreamClient, UpstreamError, type UpstreamResponse } from '../pipeline/upstream/client.ts';
import type { UpstreamRecord, Upstreams } from '../pipeline/upstream/upstreams.ts';
import { ToolError } from '../pipeline/tool-definition/errors.ts';
import { DeliveryError, OUTBOX_KEY_PREFIX, type Deliverer, type OutboxItem } from './outbox.ts';

/** The outbox kind of an effect on a declared upstream. */
export const UPSTREAM_EFFECT = 'upstream';

const params = z.record(z.string(), z.union([z.string(), z.number()]));
const scalar = z.union([z.string(), z.number(), z.boolean()]);
/** The query string, as the client takes it: a list repeats its key. */
const query = z.record(z.string(), z.union([scalar, z.array(scalar)]).optional());

/**
 * An effect on an upstream, as a gated handler queues it: `ctx.outbox.enqueue('upstream', upstreamEffect({...}))`.
 * `{key}` in a string of `json` is replaced by the idempotency key at delivery (for an upstream that
 * takes no `Idempotency-Key` but keeps a text the check can find again, such as a comment).
 * `check` is for an upstream that honours no `Idempotency-Key`: before any retry the deliverer GETs
 * it (`{key}` in its path is the idempotency key) and takes a 2xx answer as "already done" — with
 * `match`, only when the answer (a JSON object, or one object of a JSON list) holds exactly what the
 * effect wrote (see {@link matchesExactly}; `{key}` replaced), with `contains`, only when its body
 * contains that text; otherwise "not done yet" — and a 404 as "not done yet, send again"; anything
 * else fails the attempt. Prefer `match` with the key and fields only the server sets: a text anywhere
 * in the answer may have been written by someone else.
 */
export const upstreamEffectSchema = z
  .object({
    upstream: z.string().min(1),
    method: z.enum(['POST', 'PUT', 'PATCH', 'DELETE']),
    path: z.string().min(1),
    params: params.optional(),
    query: query.optional(),
    json: z.unknown().optional(),
    check: z
      .object({
        path: z.string().min(1),
        params: params.optional(),
        contains: z.string().min(1).optional(),
        match: z.record(z.string(), z.unknown()).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export type UpstreamEffect = z.input<typeof upstreamEffectSchema>;

/**
 * Checks an effect's shape and returns it as an outbox payload (the idempotency key is added at
 * delivery). A text in `json` or `check` that already carries an outbox key (`bulkhead-outbox-…`) is
 * refused: only the delivery writes one, so that only the delivery's own key can be found by the check.
 */
export function upstreamEffect(effect: UpstreamEffect): Record<string, unknown> {
  const parsed = upstreamEffectSchema.parse(effect);
  if (carriesOutboxKey([parsed.json, parsed.check]))
    throw new ToolError(
      `the effect on ${parsed.upstream} carries a text with "${OUTBOX_KEY_PREFIX}", which only Bulkhead's delivery writes; nothing was done`,
    );
  return parsed as Record<string, unknown>;
}

/** Whether a string in `value` (objects and arrays walked) contains an outbox key's prefix. */
function carriesOutboxKey(value: unknown): boolean {
  if (typeof value === 'string') return value.toLowerCase().includes(OUTBOX_KEY_PREFIX);
  if (Array.isArray(value)) return value.some(carriesOutboxKey);
  if (typeof value === 'object' && value !== null) return Object.values(value).some(carriesOutboxKey);
  return false;
}

/** `value` with `{key}` replaced by `key` in every string it holds (objects and arrays walked). */
function withKey(value: unknown, key: string): unknown {
  if (typeof value === 'string') return value.replaceAll('{key}', key);
  if (Array.isArray(value)) return value.map((v) => withKey(v, key));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withKey(v, key)]));
  return value;
}

/**
 * The `Idempotency-Key` of an outbox row: its random key, the same on every attempt, so the upstream can
 * drop a repeat.
 */
export function idempotencyKey(item: Pick<OutboxItem, 'key'>): string {
  return item.key;
}

/**
 * Whether `actual` holds exactly what `expected` names: strings, numbers, booleans and null equal;
 * an object holds each field of `expected` (fields it does not name may be there too); a list has as
 * many elements, each matching a different one of `expected`'s, in any order (an upstream may reorder).
 */
export function matchesExactly(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return false;
    const left = [...actual];
    return expected.every((e) => {
      const i = left.findIndex((a) => matchesExactly(a, e));
      return i >= 0 && left.splice(i, 1).length === 1;
    });
  }
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return false;
    const fields = actual as Record<string, unknown>;
    return Object.entries(expected).every(
      ([k, v]) => Object.hasOwn(fields, k) && matchesExactly(fields[k], v),
    );
  }
  return actual === expected;
}

/** Whether the answer to a check is, or lists, an object that {@link matchesExactly} `match`. */
function found(seen: UpstreamResponse, match: Record<string, unknown>): boolean {
  let body: unknown;
  try {
    body = seen.json<unknown>();
  } catch {
    throw new DeliveryError('the check before a retry answered with no JSON', seen.status);
  }
  return (Array.isArray(body) ? body : [body]).some((one) => matchesExactly(one, match));
}

/**
 * Delivers `upstream` rows through the kit's client: the request as queued, with the row's key as its
 * `Idempotency-Key`, under the upstream's time limit and the dispatcher's stop signal; never retried
 * by the client (the dispatcher retries with backoff, same key). On a retry of an effect that names a
 * `check`, the deliverer first asks the upstream whether the effect is already there. Every request is
 * logged as the audit event of a call records it (no header, no secret, no body).
 */
export function upstreamDeliverer(upstreams: Upstreams): Deliverer {
  return async (item, { logger, signal }) => {
    const parsed = upstreamEffectSchema.safeParse(item.payload);
    if (!parsed.success)
      throw new DeliveryError(`not an upstream effect: ${parsed.error.issues[0]?.message}`);
    const effect = parsed.data;
    const key = idempotencyKey(item);
    const records: UpstreamRecord[] = [];
    const client = createUpstreamClient(upstreams, effect.upstream, { signal, records, readOnly: false });
    const attempt = async <T>(work: () => Promise<T>): Promise<T> => {
      try {
        return await work();
      } catch (err) {
        if (err instanceof UpstreamError) throw new DeliveryError(err.message, err.statusCode);
        throw err;
      } finally {
        logger.info({ upstream: records.splice(0) }, 'upstream effect request');
      }
    };
    if (effect.check && item.attempt > 1) {
      const check = effect.check;
      const seen: UpstreamResponse = await attempt(() =>
        client.get(check.path, { params: { ...check.params, key } }),
      );
      const done =
        seen.ok &&
        (!check.contains || seen.text().text.includes(check.contains.replaceAll('{key}', key))) &&
        (!check.match || found(seen, withKey(check.match, key) as Record<string, unknown>));
      if (done) return { statusCode: seen.status };
      if (!seen.ok && seen.status !== 404)
        throw new DeliveryError(`the check before a retry answered HTTP ${seen.status}`, seen.status);
    }
    const res = await attempt(() =>
      client.request(effect.method, effect.path, {
        ...(effect.params ? { params: effect.params } : {}),
        ...(effect.query ? { query: effect.query } : {}),
        ...(effect.json !== undefined ? { json: withKey(effect.json, key) } : {}),
        idempotencyKey: key,
        headers: { 'x-bulkhead-delivery-attempt': String(item.attempt) },
      }),
    );
    if (!res.ok) throw new DeliveryError(`${effect.upstream} answered HTTP ${res.status}`, res.status);
    return { statusCode: res.status };
  };
}
