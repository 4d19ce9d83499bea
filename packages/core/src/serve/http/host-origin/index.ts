import type { MiddlewareHandler } from 'hono';
import {
  localhostAllowedHostnames,
  validateHostHeader,
  validateOriginHeader,
} from '@modelcontextprotocol/server';
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

/** The Host names and Origin hostnames a request may carry: loopback, the public URL's, and those configured. */
export function allowedHostsAndOrigins(
  publicUrl: URL,
  options: { allowedHosts?: string[] | undefined; allowedOrigins?: string[] | undefined },
): { hosts: string[]; origins: string[] } {
  const own = [...localhostAllowedHostnames(), hostnameOf(publicUrl)];
  return {
    hosts: [...new Set([...own, ...(options.allowedHosts ?? []).map((h) => h.toLowerCase())])],
    origins: [...new Set([...own, ...(options.allowedOrigins ?? []).map((o) => originHostname(o)!)])],
  };
}

/** Hostnames in the SDK's validators' form (IPv6 in brackets). */
function hostnameOf(url: URL): string {
  return url.hostname.toLowerCase();
}

function originHostname(origin: string): string | undefined {
  try {
    return new URL(origin).hostname.toLowerCase();
  } catch {
    return origin.toLowerCase();
  }
}
