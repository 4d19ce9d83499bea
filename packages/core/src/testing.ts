import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { Sql } from '@bulkhead/db';
import pino from 'pino';
import type { ServerDefinition } from './create-server.ts';
import { createHttpApp, type HttpAppOptions } from './http-app.ts';
import { issueToken } from './tokens.ts';

/** A server listening on a random loopback port, for tests that use a real client over real HTTP. */
export interface TestServer {
  url: URL;
  close(): Promise<void>;
}

/** Serves `def` on 127.0.0.1 with a random port. Logs are discarded unless `logger` is given. */
export async function startTestServer(
  def: ServerDefinition,
  options: Partial<HttpAppOptions> & { sql: Sql },
): Promise<TestServer> {
  const http = createHttpApp(def, {
    logger: pino({ level: 'silent' }),
    publicUrl: 'http://127.0.0.1',
    ...options,
  });
  const server = serve({ fetch: http.app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    close: async () => {
      await new Promise((resolve) => server.close(resolve));
      await http.close();
    },
  };
}

/** Issues a token with every scope of `def` (or `scopes`) for a test. */
export async function issueTestToken(
  sql: Sql,
  def: ServerDefinition,
  options: { scopes?: string[]; customerId?: string | null; label?: string; expiresAt?: Date | null } = {},
): Promise<string> {
  const { token } = await issueToken(sql, {
    server: def.name,
    label: options.label ?? 'test client',
    scopes: options.scopes ?? [...def.catalog.scopes],
    customerId: options.customerId ?? null,
    expiresAt: options.expiresAt === undefined ? new Date(Date.now() + 3600_000) : options.expiresAt,
    createdBy: 'test',
  });
  return token;
}
