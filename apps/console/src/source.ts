import { isIPv4, isIPv6 } from 'node:net';
import type { HttpBindings } from '@hono/node-server';
import type { Context } from 'hono';

/**
 * One source as the sign-in throttle counts it: an IPv4 address, or the /64
 * network of an IPv6 address (one subscriber gets a whole /64, so counting
 * single IPv6 addresses would give an attacker 2^64 tries). IPv4-mapped IPv6
 * addresses count as IPv4. Anything else is kept as given, cut to 100 characters.
 */
export function sourceKey(address: string): string {
  const a = address.trim();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a)?.[1];
  if (mapped && isIPv4(mapped)) return mapped;
  if (isIPv4(a)) return a;
  const bare = a.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!isIPv6(bare)) return a.slice(0, 100) || 'unknown';
  if (bare === '::1') return '::1';
  const [head = '', tail = ''] = bare.split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const left = groups(head);
  // An IPv4 tail is the last 32 bits (two groups), never part of the /64.
  const right = groups(tail).flatMap((g) => (isIPv4(g) ? ['0', '0'] : [g]));
  const full = bare.includes('::')
    ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
    : [...left, ...right];
  return `${full
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/**
 * The address a request comes from. With `proxyHops` reverse proxies in front
 * of the console, each appending the address it received from to
 * `X-Forwarded-For`, it is the entry that the outermost of them wrote;
 * anything a client wrote further left is ignored, since a client can write
 * anything there. Without a socket (in-process requests) it is `unknown`.
 */
export function sourceAddress(c: Context, proxyHops: number): string {
  const socket = (c.env as Partial<HttpBindings> | undefined)?.incoming?.socket.remoteAddress ?? 'unknown';
  if (proxyHops <= 0) return sourceKey(socket);
  const forwarded = (c.req.header('x-forwarded-for') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const chain = [...forwarded, socket];
  return sourceKey(chain[Math.max(0, chain.length - 1 - proxyHops)]!);
}
