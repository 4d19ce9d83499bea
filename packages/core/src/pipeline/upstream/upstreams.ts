import { Agent } from 'undici';

/** How the kit authenticates to an upstream, with its secret read. */
export type UpstreamAuth =
  | { type: 'none' }
  | { type: 'header'; header: string; value: string }
  | { type: 'mtls'; cert: string; key: string; ca?: string };

/** A declared upstream, resolved at start: its base URL, credentials and limits. */
export interface UpstreamConfig {
  name: string;
  title: string;
  baseUrl: URL;
  auth: UpstreamAuth;
  maxResponseBytes: number;
  timeoutMs: number;
  retries: number;
  /** Every secret value, so that nothing the kit records can carry one. */
  secrets: string[];
}

/** One outgoing request as the call's audit event keeps it: never a header, a secret or a body. */
export interface UpstreamRecord {
  upstream: string;
  method: string;
  /** The path as the handler wrote it (`/alerts/{id}`), and as sent (`/alerts/42`, no query). */
  path_template: string;
  path: string;
  /** 1 for the first try of a read, 2 for its first retry, ... */
  attempt: number;
  /** The upstream's status; null when it gave none (refused, unreachable, too slow). */
  status: number | null;
  /** Response body bytes read. */
  bytes: number;
  ms: number;
  /** Set when the kit refused or stopped the request: what happened, in a word. */
  refused?:
    'undeclared_host' | 'redirect_to_undeclared_host' | 'too_large' | 'timeout' | 'write_in_read_tool';
  /** Set when the request failed: unreachable, aborted by the call, ... */
  error?: string;
}

/** The upstreams a server declared, with a connection pool each (mutual TLS configured on it). */
export interface Upstreams {
  readonly byName: ReadonlyMap<string, UpstreamConfig>;
  /** The pool of an upstream, holding its client certificate when it authenticates by mutual TLS. */
  agent(name: string): Agent;
  /** Calls `fn` with every finished request (for `/metrics`). */
  observe(fn: (record: UpstreamRecord) => void): void;
  /** Hands a finished request to the observers. */
  recorded(record: UpstreamRecord): void;
  close(): Promise<void>;
}

/** The registry of declared upstreams (see `resolveUpstreams`); an empty one when a server declares none. */
export function createUpstreams(configs: readonly UpstreamConfig[] = []): Upstreams {
  const byName = new Map(configs.map((c) => [c.name, c]));
  const agents = new Map<string, Agent>();
  const observers: ((record: UpstreamRecord) => void)[] = [];
  return {
    byName,
    agent(name) {
      let agent = agents.get(name);
      if (!agent) {
        const auth = byName.get(name)?.auth;
        agent = new Agent({
          connections: 32,
          ...(auth?.type === 'mtls'
            ? { connect: { cert: auth.cert, key: auth.key, ...(auth.ca ? { ca: auth.ca } : {}) } }
            : {}),
        });
        agents.set(name, agent);
      }
      return agent;
    },
    observe(fn) {
      observers.push(fn);
    },
    recorded(record) {
      for (const fn of observers) fn(record);
    },
    async close() {
      await Promise.all([...agents.values()].map((a) => a.close()));
      agents.clear();
    },
  };
}
