import { readFileSync } from 'node:fs';
import { serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { AddressInfo } from 'node:net';
import type { Sql } from '@bulkhead/db';
import pino from 'pino';
import type { ServerDefinition } from './create-server.ts';
import { createHttpApp, type HttpAppOptions } from './http-app.ts';
import { lintServer } from './lint/lint-tools.ts';
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

/** Connects a real 2026-07-28 MCP client to `url` with `token` as its bearer token. */
export async function connectTestClient(url: URL, token: string, name = 'bulkhead-test'): Promise<Client> {
  const client = new Client(
    { name, version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

/** A tool result as tests read it. */
export interface FlatResult {
  isError: boolean;
  text: string;
  structured: Record<string, unknown> | undefined;
}

/** Calls a tool and flattens the result to `{ isError, text, structured }`. */
export async function callFlat(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<FlatResult> {
  const result = await client.callTool({ name, arguments: args });
  const content = result.content as { type: string; text?: string }[];
  return {
    isError: result.isError === true,
    text: content.map((c) => c.text ?? '').join('\n'),
    structured: result.structuredContent as Record<string, unknown> | undefined,
  };
}

/** What a server shows the model, as its own test checks it. */
export interface ServerSurface {
  /** Linter findings on its tools/list (none for a shipped server). */
  findings: ReturnType<typeof lintServer>['findings'];
  chars: number;
  /** The budget the linter checked against (undefined would mean it checked none). */
  budgetChars: number | undefined;
  /** The `bulkhead.scopes` of its package.json, and the scopes its tools actually need. */
  declaredScopes: string[];
  toolScopes: string[];
}

/** Lints a server definition and reads its package.json manifest, so each server's test is three assertions. */
export function serverSurface(def: ServerDefinition, packageJson: URL): ServerSurface {
  const lint = lintServer(def);
  const manifest = JSON.parse(readFileSync(packageJson, 'utf8')) as { bulkhead?: { scopes?: string[] } };
  return {
    findings: lint.findings,
    chars: lint.size.chars,
    budgetChars: lint.budgetChars,
    declaredScopes: manifest.bulkhead?.scopes ?? [],
    toolScopes: [...def.catalog.scopes],
  };
}

/**
 * How browser tests start Debian's Chromium with playwright-core: headless, and
 * quiet on a machine without outside network (no background or update traffic).
 */
export const chromiumLaunchOptions = {
  executablePath: '/usr/bin/chromium',
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
  ],
};
