import type { MiddlewareHandler } from 'hono';
import { Refusal } from '../refusal.ts';
import type { McpEnv } from '../state.ts';

/**
 * Refuses a body declared larger than `maxBody` (413) before anything reads it: cheap, and before the
 * token check, so that no one can make the server read a large body. A body that does not declare its
 * length is counted while it streams in, by `jsonBody`.
 */
export function declaredBodySize(maxBody: number): MiddlewareHandler<McpEnv> {
  return async (c, next) => {
    if (Number(c.req.header('content-length') ?? '0') > maxBody)
      throw new Refusal(
        413,
        'payload_too_large',
        { error: 'payload_too_large', error_description: `Request bodies are limited to ${maxBody} bytes.` },
        { summary: { reason: 'body', bytes: Number(c.req.header('content-length')) } },
      );
    await next();
  };
}
