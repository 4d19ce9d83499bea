import type { MiddlewareHandler } from 'hono';
import { validateHostHeader, validateOriginHeader } from '@modelcontextprotocol/server';
import { Refusal } from '../refusal.ts';
import type { McpEnv } from '../state.ts';

/**
 * DNS-rebinding and cross-site protection with the SDK's own validators: the
 * `Host` must name an allowed host, and an `Origin`, when sent, an allowed one
 * (both by hostname, port-agnostic, as the SDK compares them).
 */
export function hostAndOrigin(allowedHosts: string[], allowedOrigins: string[]): MiddlewareHandler<McpEnv> {
  return async (c, next) => {
    const host = validateHostHeader(c.req.header('host'), allowedHosts);
    if (!host.ok)
      throw new Refusal(
        403,
        'forbidden',
        { error: 'forbidden', error_description: 'Host not allowed.' },
        { summary: { reason: 'host', host: c.req.header('host') ?? null } },
      );
    const origin = validateOriginHeader(c.req.header('origin'), allowedOrigins);
    if (!origin.ok)
      throw new Refusal(
        403,
        'forbidden',
        { error: 'forbidden', error_description: 'Origin not allowed.' },
        { summary: { reason: 'origin', origin: c.req.header('origin') ?? null } },
      );
    await next();
  };
}
