import { z } from 'zod';
import { createUpstreamClient, UpstreamError, type UpstreamResponse } from '../pipeline/upstream/client.ts';
import type { UpstreamRecord, Upstreams } from '../pipeline/upstream/upstreams.ts';
import { DeliveryError, type Deliverer } from './outbox.ts';

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
 * it (`{key}` in its path is the idempotency key) and takes a 2xx answer as "already done" (with
 * `contains`, only when the answer's body contains that text, `{key}` replaced; otherwise "not done
 * yet"), a 404 as "not done yet, send again"; anything else fails the attempt.
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
      .object({ path: z.string().min(1), params: params.optional(), contains: z.string().min(1).optional() })
      .strict()
      .optional(),
  })
  .strict();

export type UpstreamEffect = z.input<typeof upstreamEffectSchema>;

/** Checks an effect's shape and returns it as an outbox payload (the idempotency key is added at delivery). */
export function upstreamEffect(effect: UpstreamEffect): Record<string, unknown> {
  return upstreamEffectSchema.parse(effect) as Record<string, unknown>;
}

/** `value` with `{key}` replaced by `key` in every string it holds (objects and arrays walked). */
function withKey(value: unknown, key: string): unknown {
  if (typeof value === 'string') return value.replaceAll('{key}', key);
  if (Array.isArray(value)) return value.map((v) => withKey(v, key));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withKey(v, key)]));
  return value;
}

/** The `Idempotency-Key` of an outbox row: the same on every attempt, so the upstream can drop a repeat. */
export function idempotencyKey(outboxId: number): string {
  return `bulkhead-outbox-${outboxId}`;
}

/**
 * Delivers `upstream` rows through the kit's client: the request as queued, with the outbox id as its
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
    const key = idempotencyKey(item.id);
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
        seen.ok && (!check.contains || seen.text().text.includes(check.contains.replaceAll('{key}', key)));
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
