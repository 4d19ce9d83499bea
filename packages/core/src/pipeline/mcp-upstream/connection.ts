import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import {
  Client,
  StreamableHTTPClientTransport,
  type Tool,
  type Transport,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { Logger } from 'pino';

/** How the kit reaches an upstream MCP server: a command it runs (stdio), or a Streamable HTTP URL. */
export type McpUpstreamTransport =
  | { type: 'stdio'; command: string; args: readonly string[]; env?: Record<string, string>; cwd?: string }
  | { type: 'http'; url: URL; headers: Record<string, string> };

/** A declared upstream MCP server (`bulkhead.mcpUpstream`), resolved at start with its secrets read. */
export interface McpUpstreamConfig {
  /** The name its pins and tools refer to. */
  name: string;
  /** How people call it ("the file server"): named in every error about it. */
  title: string;
  transport: McpUpstreamTransport;
  /** Every secret value (a header's, an environment variable's), so that nothing recorded carries one. */
  secrets: readonly string[];
}

/** Where a connection is: being made, serving, lost (restarting with back-off), or closed for good. */
export type McpConnectionState = 'connecting' | 'up' | 'down' | 'closed';

/** The upstream is not serving: nothing was sent to it. */
export class McpUpstreamDown extends Error {
  override readonly name = 'McpUpstreamDown';
}

/** A supervised connection to one upstream MCP server. */
export interface McpConnection {
  readonly config: McpUpstreamConfig;
  state(): McpConnectionState;
  /** The process id of a stdio upstream's child while one runs (for the log and for tests); else null. */
  pid(): number | null;
  /** Connects (once; later calls do nothing): the first listing of its tools follows. */
  start(): void;
  /** The connected client, waiting up to `waitMs` for a connection being made; throws {@link McpUpstreamDown}. */
  client(waitMs: number): Promise<Client>;
  /** Calls `fn` with the upstream's whole tools/list: on every connect and every `notifications/tools/list_changed`. */
  onTools(fn: (tools: Tool[]) => void): void;
  /** Tells the supervisor that `client` failed under a call (HTTP keeps no process to watch): it connects again. */
  failed(client: Client, err: unknown): void;
  close(): Promise<void>;
}

/** Back-off of restarts: from `minMs`, doubling, up to `maxMs`. */
export interface RestartPolicy {
  minMs: number;
  maxMs: number;
}

const DEFAULT_RESTART: RestartPolicy = { minMs: 250, maxMs: 30_000 };

/**
 * A fetch that reaches only `origin` and follows no redirect: an HTTP upstream is reached at its
 * declared origin and nowhere else, whatever it answers.
 */
function declaredOriginOnly(origin: string): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const target = new URL(url);
    if (target.origin !== origin)
      throw new McpUpstreamDown(
        `refused a request to ${target.origin}: the upstream is declared at ${origin}`,
      );
    return fetch(target, { ...init, redirect: 'error' });
  };
}

/** `connecting`, waited for at most `waitMs`; any failure is the upstream being down. */
async function waitFor(
  connecting: Promise<Client>,
  waitMs: number,
  down: () => McpUpstreamDown,
): Promise<Client> {
  let wait: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      connecting,
      new Promise<never>((_, reject) => {
        wait = setTimeout(() => reject(down()), waitMs);
        wait.unref();
      }),
    ]);
  } catch (err) {
    throw err instanceof McpUpstreamDown ? err : down();
  } finally {
    clearTimeout(wait);
  }
}

/** The transport for one connection attempt; a stdio child's stderr goes to the log, line by line. */
function openTransport(config: McpUpstreamConfig, logger: Logger): Transport {
  const t = config.transport;
  if (t.type === 'http')
    return new StreamableHTTPClientTransport(t.url, {
      requestInit: { headers: t.headers },
      fetch: declaredOriginOnly(t.url.origin),
    });
  const stdio = new StdioClientTransport({
    command: t.command,
    args: [...t.args],
    stderr: 'pipe',
    ...(t.env ? { env: t.env } : {}),
    ...(t.cwd ? { cwd: t.cwd } : {}),
  });
  const stderr = stdio.stderr;
  if (stderr instanceof Readable)
    createInterface({ input: stderr }).on('line', (line) =>
      logger.warn({ upstream: config.name, stderr: line.slice(0, 2000) }, 'upstream stderr'),
    );
  return stdio;
}

/**
 * A supervised connection: a lost one (a stdio child that exited, an HTTP session that closed) is made
 * again with back-off, and every connect lists the tools again, so drift is seen whenever it appears.
 */
export function createMcpConnection(
  config: McpUpstreamConfig,
  logger: Logger,
  restart: RestartPolicy = DEFAULT_RESTART,
): McpConnection {
  const log = logger.child({ upstream: config.name });
  let state: McpConnectionState = 'connecting';
  let started = false;
  let current: Client | undefined;
  let transport: Transport | undefined;
  /** The client being connected or connected now. */
  let active: Client | undefined;
  let connecting: Promise<Client> | undefined;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  const listeners: ((tools: Tool[]) => void)[] = [];
  const closed = () => state === 'closed';
  const emit = (tools: Tool[]) => listeners.forEach((fn) => fn(tools));

  const lost = (client: Client, err?: unknown) => {
    // Only the newest client's end counts: an older one closing late changes nothing.
    if (state === 'closed' || client !== active) return;
    active = undefined;
    current = undefined;
    connecting = undefined;
    state = 'down';
    const delay = Math.min(restart.minMs * 2 ** failures, restart.maxMs);
    failures++;
    log.warn({ err, retryInMs: delay }, `upstream ${config.name} is down; connecting again`);
    clearTimeout(timer);
    timer = setTimeout(() => void connect().catch(() => {}), delay);
    timer.unref();
  };

  const connect = (): Promise<Client> => {
    if (connecting) return connecting;
    state = 'connecting';
    const client = new Client(
      { name: 'bulkhead', version: '1.0.0' },
      {
        listChanged: {
          tools: {
            onChanged: (err, tools) => (err ? log.warn({ err }, 'tools/list failed') : emit(tools ?? [])),
          },
        },
      },
    );
    active = client;
    client.onclose = () => lost(client);
    const attempt = (async () => {
      const opened = openTransport(config, log);
      transport = opened;
      await client.connect(opened);
      const { tools } = await client.listTools();
      if (closed()) throw new McpUpstreamDown(`upstream ${config.name} is closed`);
      current = client;
      state = 'up';
      failures = 0;
      log.info({ tools: tools.length }, `upstream ${config.name} connected`);
      emit(tools);
      return client;
    })();
    connecting = attempt;
    attempt.catch((err: unknown) => {
      void client.close().catch(() => {});
      lost(client, err);
    });
    return attempt;
  };

  return {
    config,
    state: () => state,
    pid: () => (state === 'up' && transport instanceof StdioClientTransport ? (transport.pid ?? null) : null),
    start() {
      if (started) return;
      started = true;
      void connect().catch(() => {});
    },
    async client(waitMs) {
      if (!started) this.start();
      if (state === 'up' && current) return current;
      const down = () =>
        new McpUpstreamDown(`upstream ${config.name} is ${state === 'closed' ? 'closed' : 'not connected'}`);
      if (state !== 'connecting' || !connecting) throw down();
      return waitFor(connecting, waitMs, down);
    },
    onTools(fn) {
      listeners.push(fn);
    },
    failed(client, err) {
      if (client !== current) return;
      lost(client, err);
      void client.close().catch(() => {});
    },
    async close() {
      state = 'closed';
      clearTimeout(timer);
      const client = current ?? (await connecting?.catch(() => undefined));
      current = undefined;
      await client?.close().catch(() => {});
    },
  };
}
