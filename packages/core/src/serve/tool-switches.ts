import { createAuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import { createEventOwner } from '../pipeline/observability/request-audit.ts';
import type { SwitchedOff } from '../pipeline/call/switched-off.ts';

/** A tool an operator has switched off, as stored. */
export interface SwitchedOffTool {
  server: string;
  tool: string;
  reason: string;
  switchedBy: string;
  switchedAt: Date;
}

/** The database channel a change of the switches is announced on (payload: the server's name). */
export const TOOL_SWITCHES_CHANNEL = 'bulkhead_tool_switches';

/** The switched-off tools, of one server or of all, by server and tool. Needs the owner's connection. */
export async function listSwitchedOffTools(sql: Sql, server?: string): Promise<SwitchedOffTool[]> {
  return sql<SwitchedOffTool[]>`
    select server, tool, reason, switched_by as "switchedBy", switched_at as "switchedAt"
    from bulkhead_tool_switches
    ${server ? sql`where server = ${server}` : sql``}
    order by server, tool`;
}

/** Who switches and why; `operator` is recorded as who switched. */
export interface ToolSwitchInput {
  server: string;
  tool: string;
  operator: string;
}

/** A switch's event: about the switched tool's server, named by the operator, a request of its own. */
function switchEvent(input: ToolSwitchInput, state: 'off' | 'on', reason: string | null) {
  const owner = createEventOwner({ server: input.server, by: { tokenId: null, label: input.operator } });
  return owner.event({
    method: 'tools/switch',
    tool: input.tool,
    outcome: 'ok',
    durationMs: 0,
    resultSummary: { state, reason, switched_by: input.operator },
  });
}

/**
 * Switches a tool off, with its audit event in the same transaction; undefined when it was off
 * already (nothing changes then). Every replica of the server drops it from its tools/list on the
 * announcement the database makes. Needs the owner's connection (no deployable role writes the table).
 */
export async function switchToolOff(
  sql: Sql,
  input: ToolSwitchInput & { reason: string },
): Promise<SwitchedOffTool | undefined> {
  const audit = createAuditWriter(sql);
  return sql.begin(async (tx) => {
    const [row] = await tx<SwitchedOffTool[]>`
      insert into bulkhead_tool_switches (server, tool, reason, switched_by)
      values (${input.server}, ${input.tool}, ${input.reason}, ${input.operator})
      on conflict (server, tool) do nothing
      returning server, tool, reason, switched_by as "switchedBy", switched_at as "switchedAt"`;
    if (!row) return undefined;
    await audit.appendIn(tx, switchEvent(input, 'off', input.reason));
    return row;
  });
}

/** Switches a tool on again, audited; the record it was off under, or undefined when it was not off. */
export async function switchToolOn(sql: Sql, input: ToolSwitchInput): Promise<SwitchedOffTool | undefined> {
  const audit = createAuditWriter(sql);
  return sql.begin(async (tx) => {
    const [row] = await tx<SwitchedOffTool[]>`
      delete from bulkhead_tool_switches where server = ${input.server} and tool = ${input.tool}
      returning server, tool, reason, switched_by as "switchedBy", switched_at as "switchedAt"`;
    if (!row) return undefined;
    await audit.appendIn(tx, switchEvent(input, 'on', null));
    return row;
  });
}

/** A server's switched-off tools held in memory, and told when they change. */
export interface ToolSwitches extends SwitchedOff {
  /** Calls `listener` after each change of the set (not on the first read); returns how to stop. */
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}

/** Options of {@link createToolSwitches}. */
export interface ToolSwitchesOptions {
  /** How often the set is read again whatever was announced, so a lost notification heals (default 1000 ms). */
  refreshMs?: number | undefined;
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

/**
 * Holds `server`'s switched-off tools in memory, read through `bulkhead_switched_off_tools` (which
 * answers a server's role only for its own server), so that a request asks no query. Read again at
 * once when the database announces a change for this server (LISTEN/NOTIFY, on the pool's one listening
 * connection, as the token cache does), when that connection is made again, and every `refreshMs`
 * whatever happens, so a lost announcement heals within about a second.
 */
export function createToolSwitches(
  sql: Sql,
  server: string,
  options: ToolSwitchesOptions = {},
): ToolSwitches {
  let current: ReadonlySet<string> | undefined;
  let reading: Promise<ReadonlySet<string>> | undefined;
  let again = false;
  let closed = false;
  const listeners = new Set<() => void>();

  const read = async (): Promise<ReadonlySet<string>> => {
    const rows = await sql<{ tool: string }[]>`select tool from bulkhead_switched_off_tools(${server})`;
    const next: ReadonlySet<string> = new Set(rows.map((r) => r.tool));
    const changed = current !== undefined && !sameSet(current, next);
    current = next;
    if (changed)
      for (const listener of listeners)
        try {
          listener();
        } catch {
          // A listener's failure (a closed transport) is its own; the others are still told.
        }
    return next;
  };
  // One read at a time; an announcement during a read may describe a change it did not see, so one more follows.
  const refresh = (): Promise<ReadonlySet<string>> => {
    if (reading) {
      again = true;
      return reading;
    }
    reading = read().finally(() => {
      reading = undefined;
      if (again && !closed) {
        again = false;
        refresh().catch(() => {});
      }
    });
    return reading;
  };

  const listening = sql.listen(
    TOOL_SWITCHES_CHANNEL,
    (payload) => {
      if (payload === server) refresh().catch(() => {});
    },
    // (Re)connected: whatever was announced while the connection was down is unknown, so read again.
    () => {
      if (current !== undefined) refresh().catch(() => {});
    },
  );
  listening.catch(() => {});
  const timer = setInterval(() => void refresh().catch(() => {}), options.refreshMs ?? 1000);
  timer.unref();

  return {
    names: () => current ?? refresh(),
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      clearInterval(timer);
      listeners.clear();
      const l = await listening.catch(() => undefined);
      await l?.unlisten().catch(() => {});
      await reading?.catch(() => {});
    },
  };
}
