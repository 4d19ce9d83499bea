import { discoverDeployables, type Deployable } from '@bulkhead/deployables';
import { UsageError } from './io.ts';
import { repoRoot } from './root.ts';

/** A deployable found under `servers/`, from the `bulkhead` field of its package.json. */
export type ServerManifest = Deployable;

/**
 * Finds the servers by their folders, so that adding a bounded server means
 * adding a folder: nothing here lists them by name.
 */
export function discoverServers(root = repoRoot): ServerManifest[] {
  return discoverDeployables(root);
}

/** What a server's URL is made of: where it listens, and whether clients add `/mcp`. */
type Listener = Pick<ServerManifest, 'port' | 'kind'>;

/**
 * The URL a server listens on by default: its manifest port plus `offset` (BULKHEAD_PORT_OFFSET or
 * `--port-offset`). `pnpm start` passes servers whose ports already carry its offset, and none.
 */
export function defaultUrl(server: Listener, offset = 0): string {
  return publicUrl(server, { portOffset: offset });
}

/** What decides where clients reach a server (see {@link publicUrl}). */
export interface PublicUrlSettings {
  /** `--url`: the URL exactly as given. */
  url?: string | undefined;
  /** The server's own variables, as in its environment. */
  BULKHEAD_PUBLIC_URL?: string | undefined;
  HOST?: string | undefined;
  PORT?: number | undefined;
  /** `--port-offset` / `BULKHEAD_PORT_OFFSET`: added to the manifest port. */
  portOffset?: number;
}

const UNSPECIFIED = new Set(['0.0.0.0', '::', '[::]']);

/**
 * The URL clients use for `server`, decided the way the server decides its own
 * `BULKHEAD_PUBLIC_URL`: `--url` as given; else `BULKHEAD_PUBLIC_URL` (+ `/mcp`);
 * else `http://HOST:PORT/mcp`, where HOST defaults to 127.0.0.1 (and a listen-everywhere
 * address becomes 127.0.0.1, which a client can dial) and PORT to the manifest port plus
 * the offset.
 */
export function publicUrl(server: Listener, settings: PublicUrlSettings = {}): string {
  const path = server.kind === 'mcp' ? '/mcp' : '';
  if (settings.url) return settings.url;
  if (settings.BULKHEAD_PUBLIC_URL) return `${settings.BULKHEAD_PUBLIC_URL.replace(/\/+$/, '')}${path}`;
  const host = !settings.HOST || UNSPECIFIED.has(settings.HOST) ? '127.0.0.1' : settings.HOST;
  const port = settings.PORT ?? server.port + (settings.portOffset ?? 0);
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}${path}`;
}

/** `--port-offset <n>` checked, or `fallback` (BULKHEAD_PORT_OFFSET) when it is not given. */
export function portOffsetOption(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const offset = Number(value);
  if (!/^\d+$/.test(value) || offset > 60_000)
    throw new UsageError('--port-offset: a whole number from 0 to 60000');
  return offset;
}
