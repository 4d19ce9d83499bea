import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { workspaceRoot } from '@bulkhead/core';

/** A deployable found under `servers/`, from the `bulkhead` field of its package.json. */
export interface ServerManifest {
  /** Folder and package name: `admin`, `customer`, `dev-knowledge`, `console`. */
  name: string;
  dir: string;
  /** `mcp` servers take MCP tokens; `console` is the approvers' web console. */
  kind: 'mcp' | 'console';
  port: number;
  /** Every scope the server's tools need (checked against the server's own tools by its tests). */
  scopes: string[];
  /** True when some tool of the server is gated (it serves get_approval_status). */
  gated: boolean;
  /** True when every token of this server is bound to one customer (`--customer` required). */
  customerBound: boolean;
}

/**
 * Finds the servers by their folders, so that adding a bounded server means
 * copying a folder: nothing here lists them by name.
 */
export function discoverServers(root = workspaceRoot()): ServerManifest[] {
  const base = join(root, 'servers');
  if (!existsSync(base)) return [];
  const found: ServerManifest[] = [];
  for (const entry of readdirSync(base, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const file = join(base, entry.name, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as {
      name: string;
      bulkhead?: {
        kind?: 'mcp' | 'console';
        port?: number;
        scopes?: string[];
        gated?: boolean;
        customerBound?: boolean;
      };
    };
    if (!pkg.bulkhead?.port) continue;
    found.push({
      name: entry.name,
      dir: join(base, entry.name),
      kind: pkg.bulkhead.kind ?? 'mcp',
      port: pkg.bulkhead.port,
      scopes: pkg.bulkhead.scopes ?? [],
      gated: pkg.bulkhead.gated ?? false,
      customerBound: pkg.bulkhead.customerBound ?? false,
    });
  }
  return found.sort((a, b) => a.port - b.port);
}

/** The URL a server listens on by default (`pnpm start`). */
export function defaultUrl(server: ServerManifest): string {
  return `http://127.0.0.1:${server.port}${server.kind === 'mcp' ? '/mcp' : ''}`;
}
