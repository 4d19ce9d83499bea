import { builtInDeployables } from '@bulkhead/deployables/built-in';
import type { OAuthServer } from './oauth/context.ts';

/**
 * The MCP servers the console grants tokens for, from the manifests built into it (nothing of the
 * repository is read by a bundled console), each at its URL in `BULKHEAD_SERVER_URLS` or its manifest's
 * port on this machine.
 */
export function oauthServers(urls: Record<string, string> | undefined): OAuthServer[] {
  return builtInDeployables()
    .filter((d) => d.kind === 'mcp')
    .map((d) => ({
      name: d.name,
      description: d.description.replace(/^Bulkhead MCP server:\s*/, ''),
      resource: `${urls?.[d.name] ?? `http://127.0.0.1:${d.port}`}/mcp`,
      scopes: d.scopes,
      customerBound: d.customerBound,
    }));
}
