import type { Context, Hono } from 'hono';
import { isReachable, type Sql } from '@bulkhead/db';
import type { ReadLanes } from '../../../pipeline/database/read-lanes.ts';
import type { ServerDefinition } from '../../../pipeline/tool-definition/server-definition.ts';
import { metricsRoute, type Metrics } from '../../metrics.ts';
import { SESSIONS_SHARED } from '../../pooler.ts';
import { sourceOf } from '../request-context/index.ts';
import type { McpEnv } from '../state.ts';
import type { McpUpstreams } from '../../../pipeline/mcp-upstream/upstreams.ts';

/** What the probes read of the app's options. */
export interface ProbeOptions {
  sql: Sql;
  /** `BULKHEAD_METRICS_TOKEN`: lets a scraper that is not on loopback read `/metrics`. */
  metricsToken?: string | undefined;
  /** `BULKHEAD_AUTHORIZATION_SERVER`: when set, the protected-resource metadata is published. */
  authorizationServer?: string | undefined;
  /** Upstream MCP servers: `/readyz` reports each apart from the server itself. */
  mcpUpstreams?: McpUpstreams | undefined;
}

/**
 * `GET /healthz`, `/readyz` (both pools serve), `/metrics`, and with an authorization server the
 * protected-resource metadata; returns the metadata's URL, which every 401 names.
 */
export function mountProbes(
  app: Hono<McpEnv>,
  def: ServerDefinition,
  options: ProbeOptions,
  made: { reads: ReadLanes | undefined; metrics: Metrics; publicUrl: URL },
): string {
  const { sql } = options;
  const { reads, publicUrl } = made;
  app.get('/healthz', (c) => c.json({ status: 'ok', server: def.name }));
  // Ready when both pools serve: the main one (tokens, events, writes) and the read pool (read-only calls),
  // and no pooler was found sharing sessions at run time (the start-up check names it, and so does this).
  app.get('/readyz', async (c) => {
    if (reads?.sharesSessions)
      return c.json({ status: 'unavailable', server: def.name, reason: SESSIONS_SHARED }, 503);
    const [main, read] = await Promise.all([isReachable(sql, 2000), reads ? reads.serves(2000) : true]);
    // An upstream MCP server is reported apart: the server itself serves (and says so to the model) while one is down.
    const upstreams = options.mcpUpstreams ? { upstreams: options.mcpUpstreams.states() } : {};
    if (main && read) return c.json({ status: 'ready', server: def.name, ...upstreams });
    const reason = main ? 'read pool cannot serve' : 'database unreachable';
    return c.json({ status: 'unavailable', server: def.name, reason, ...upstreams }, 503);
  });
  app.get('/metrics', metricsRoute(made.metrics, options.metricsToken, sourceOf));
  const resource = `${publicUrl.origin}${publicUrl.pathname.replace(/\/$/, '')}/mcp`;
  const metadataUrl = `${publicUrl.origin}/.well-known/oauth-protected-resource${new URL(resource).pathname}`;
  if (options.authorizationServer) {
    const document = protectedResourceMetadata(def, resource, options.authorizationServer);
    // Public documents: any page may read them (a browser-based client discovers the server with them).
    const serveMetadata = (c: Context) => {
      c.header('Access-Control-Allow-Origin', '*');
      c.header('Cache-Control', 'public, max-age=300');
      return c.json(document);
    };
    app.get('/.well-known/oauth-protected-resource', serveMetadata);
    app.get(new URL(metadataUrl).pathname, serveMetadata);
  }
  return metadataUrl;
}

/**
 * The protected-resource metadata (RFC 9728) of a server: its MCP URL as the resource, the console as
 * its authorization server, and the scopes its tools need.
 */
export function protectedResourceMetadata(def: ServerDefinition, resource: string, issuer: string) {
  return {
    resource,
    authorization_servers: [issuer.replace(/\/$/, '')],
    scopes_supported: [...def.catalog.scopes].sort(),
    bearer_methods_supported: ['header'],
    resource_name: `Bulkhead ${def.name}`,
  };
}
