import type { Tool } from '@modelcontextprotocol/client';
import type { AuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { SwitchedOff } from '../call/switched-off.ts';
import { createEventOwner } from '../observability/request-audit.ts';
import { createCatalog, type ToolListing } from '../tool-definition/catalog.ts';
import type { AnyTool } from '../tool-definition/define-tool.ts';
import { acceptanceKey, evaluateListing, type Drift } from './drift.ts';
import { pinnedTool } from './pinned-tool.ts';
import type { McpUpstreams } from './upstreams.ts';
import type { PinnedTool } from './pins.ts';

/** The database channel an acceptance is announced on (payload: the server's name). */
export const MCP_PINS_CHANNEL = 'bulkhead_mcp_pins';

/** What the call pipeline asks of the pins: which tools are withheld, and which are served as accepted. */
export interface PinnedServing {
  /** Served names withheld now (drifted and not accepted, or gone from the upstream). */
  withheld(): ReadonlySet<string>;
  /** The tool served under `name` when an operator accepted its drifted definition; else undefined. */
  tool(name: string): AnyTool | undefined;
  listing(name: string): ToolListing | undefined;
}

/** A running watch of a server's pins. */
export interface PinWatch extends PinnedServing {
  /** Calls `fn` when the served tools change (withheld, or served again): clients are told `list_changed`. */
  onChange(fn: () => void): void;
  /** Resolves once every upstream listed its tools once and was compared (tests). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

/** What a {@link createPinWatch} needs. */
export interface PinWatchOptions {
  server: string;
  tools: readonly AnyTool[];
  upstreams: McpUpstreams;
  sql: Sql;
  audit: AuditWriter;
  logger: Logger;
  /** Per upstream, its tools not chosen when it was pinned (`pins.json`'s `others`). */
  known?: Record<string, readonly string[]>;
  /** Told of each drift this process records first (for `/metrics`), and of the number withheld per upstream. */
  observed?: (drift: Drift) => void;
  withheldCount?: (upstream: string, count: number) => void;
  refreshMs?: number;
}

/** The event of a drift seen first: the tool withheld, with the diff and the linter's findings. */
function driftEvent(server: string, d: Drift) {
  const owner = createEventOwner({ server, by: { tokenId: null, label: `upstream ${d.upstream}` } });
  return owner.event({
    method: 'tools/drift',
    tool: d.served ?? d.tool,
    outcome: 'unavailable',
    durationMs: 0,
    resultSummary: {
      upstream: d.upstream,
      upstream_tool: d.tool,
      kind: d.kind,
      state: 'withheld',
      sha256: d.sha256,
      pinned_sha256: d.pinned ? ((d.pinned as { sha256?: string }).sha256 ?? null) : null,
      diff: d.diff,
      findings: d.findings.map((f) => ({ rule: f.rule, path: f.path, message: f.message })),
      blocked: d.blocked,
    },
  });
}

/** Records a drift (once per deployment) with its event in one transaction; the first recording is told on. */
async function recordDrift(options: PinWatchOptions, d: Drift): Promise<void> {
  const { server, sql } = options;
  const first = await sql.begin(async (tx) => {
    const [row] = await tx<{ first: boolean }[]>`
      select bulkhead_record_mcp_drift(${server}, ${d.upstream}, ${d.tool}, ${d.sha256}, ${d.kind},
        ${d.pinned ? tx.json(d.pinned as never) : null}, ${tx.json(d.live as never)},
        ${tx.json(d.findings as never)}, ${d.blocked}) as first`;
    if (row?.first) await options.audit.appendIn(tx, driftEvent(server, d));
    return row?.first ?? false;
  });
  if (!first) return;
  options.observed?.(d);
  options.logger.warn(
    { upstream: d.upstream, tool: d.tool, kind: d.kind, sha256: d.sha256 },
    'upstream tool drifted from its pin; withheld',
  );
}

/** The tool `before` served with an accepted definition: same name, scope, gate and time limit. */
function acceptedTool(before: AnyTool, upstream: string, pin: PinnedTool): AnyTool {
  return pinnedTool(pin, {
    upstream,
    readScope: before.scope,
    writeScope: before.scope,
    gated: Boolean(before.approval),
    ...(before.timeoutMs ? { timeoutMs: before.timeoutMs } : {}),
  });
}

/**
 * Watches the upstreams' listings against the pins of `tools`: on every listing (each connect and each
 * `notifications/tools/list_changed`) and every acceptance (announced by the database), it works out
 * which tools are withheld and which are served as accepted, records each drift once per deployment
 * with its audit event (in one transaction), and tells `onChange` listeners when the served set changed.
 */
export function createPinWatch(options: PinWatchOptions): PinWatch {
  const { server, sql, logger } = options;
  let withheld: ReadonlySet<string> = new Set();
  const perUpstream = new Map<string, { withheld: Set<string>; accepted: Map<string, AnyTool> }>();
  const lastListing = new Map<string, Tool[]>();
  let accepted = new Set<string>();
  let served = new Map<string, { tool: AnyTool; listing: ToolListing }>();
  const listeners: (() => void)[] = [];
  const pending = new Set<Promise<unknown>>();
  const track = <T>(p: Promise<T>) => {
    pending.add(p);
    void p.finally(() => pending.delete(p)).catch(() => {});
    return p;
  };
  const original = new Map(options.tools.map((t) => [t.name, t]));

  const record = (d: Drift) => recordDrift(options, d);

  const apply = (upstream: string, tools: Tool[]) => {
    lastListing.set(upstream, tools);
    const result = evaluateListing(upstream, options.tools, tools, accepted, options.known?.[upstream]);
    const acceptedTools = new Map<string, AnyTool>();
    for (const [name, pin] of result.accepted) {
      acceptedTools.set(name, acceptedTool(original.get(name)!, upstream, pin));
    }
    perUpstream.set(upstream, { withheld: result.withheld, accepted: acceptedTools });
    const nextWithheld = new Set([...perUpstream.values()].flatMap((u) => [...u.withheld]));
    const nextTools = [...perUpstream.values()].flatMap((u) => [...u.accepted.values()]);
    const catalog = createCatalog(nextTools);
    const nextServed = new Map(
      nextTools.map((t) => [t.name, { tool: t, listing: catalog.listings.get(t.name)! }]),
    );
    const changed =
      [...nextWithheld].join('\n') !== [...withheld].join('\n') ||
      [...nextServed].map(([n, s]) => `${n}:${s.listing.description}`).join('\n') !==
        [...served].map(([n, s]) => `${n}:${s.listing.description}`).join('\n');
    withheld = nextWithheld;
    served = nextServed;
    options.withheldCount?.(upstream, result.withheld.size);
    for (const d of result.drifts)
      track(record(d)).catch((err: unknown) =>
        logger.error({ err, tool: d.tool }, 'drift could not be recorded'),
      );
    if (changed) for (const fn of listeners) fn();
  };

  const readAccepted = async () => {
    const rows = await sql<{ upstream: string; tool: string; sha256: string }[]>`
      select upstream, tool, sha256 from bulkhead_mcp_accepted(${server})`;
    const next = new Set(rows.map((r) => acceptanceKey(r.upstream, r.tool, r.sha256)));
    const changed = [...next].sort().join('\n') !== [...accepted].sort().join('\n');
    accepted = next;
    if (changed) for (const [upstream, tools] of lastListing) apply(upstream, tools);
  };

  const first = readAccepted().catch((err: unknown) =>
    logger.error({ err }, 'accepted pins could not be read'),
  );
  const firstListing = new Map<string, () => void>();
  const listed = [...options.upstreams.byName.keys()].map(
    (name) => new Promise<void>((resolve) => firstListing.set(name, resolve)),
  );
  options.upstreams.onTools((upstream, tools) => {
    void first.then(() => {
      apply(upstream, tools);
      firstListing.get(upstream)?.();
    });
  });
  const listening = sql.listen(MCP_PINS_CHANNEL, (payload) => {
    if (payload === server) void readAccepted().catch(() => {});
  });
  listening.catch(() => {});
  const timer = setInterval(() => void readAccepted().catch(() => {}), options.refreshMs ?? 1000);
  timer.unref();

  return {
    withheld: () => withheld,
    tool: (name) => served.get(name)?.tool,
    listing: (name) => served.get(name)?.listing,
    onChange: (fn) => void listeners.push(fn),
    settled: async () => {
      await Promise.all(listed);
      await Promise.all([...pending]);
    },
    async close() {
      clearInterval(timer);
      const l = await listening.catch(() => undefined);
      await l?.unlisten().catch(() => {});
      await Promise.all([...pending].map((p) => p.catch(() => {})));
    },
  };
}

/** The operator's switched-off tools and the tools withheld for drift: neither exists for a client. */
export function withWithheld(switches: SwitchedOff, pins: PinWatch): SwitchedOff {
  return {
    names: async () => {
      const withheld = pins.withheld();
      const off = await switches.names();
      return withheld.size ? new Set([...off, ...withheld]) : off;
    },
  };
}
