// A server's hold on the company's policy set: the active one (approved by an operator), else the default
// set (today's gates), read at start, again when the database announces a proposal or decision on the
// policy channel (LISTEN/NOTIFY), and every few seconds whatever happens, so that a lost announcement
// heals. An active set this server cannot load refuses every call (never a call without policy).
import type { Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import { DEFAULT_POLICY } from '../pipeline/policy/default-policy.ts';
import type { PolicyGate, PolicyState } from '../pipeline/policy/gate.ts';
import { loadPolicySet } from '../pipeline/policy/policy-set.ts';
import { POLICY_CHANNEL } from '../pipeline/policy/store.ts';

/** A server's policy gate that follows the active set, and how to stop following it. */
export interface PolicyWatch extends PolicyGate {
  close(): Promise<void>;
}

/** Options of {@link watchPolicy}. */
export interface PolicyWatchOptions {
  /** `BULKHEAD_POLICY_TIME_ZONE` (default UTC). */
  timeZone?: string | undefined;
  /** How often the active set's version is read again whatever was announced (default 5000 ms). */
  refreshMs?: number | undefined;
}

/** Whether `policy` reads the durable counts (only then does a call count). */
function readsUsage(text: string): boolean {
  return /context\s*\.\s*usage/.test(text);
}

async function stateOf(row: { version: string; text: string } | undefined): Promise<PolicyState> {
  const text = row?.text ?? DEFAULT_POLICY;
  // Validated against every server's tools when it was proposed and approved; here only parsed.
  const set = await loadPolicySet(text, null);
  return {
    set,
    active: row !== undefined,
    countsUsage: readsUsage(text),
    readsGroups: /Bulkhead\s*::\s*Group/.test(text),
  };
}

/** Follows the active policy set for `server`'s calls. */
export function watchPolicy(sql: Sql, logger: Logger, options: PolicyWatchOptions = {}): PolicyWatch {
  let current: PolicyState | undefined;
  let version: string | null | undefined;
  let reading: Promise<PolicyState> | undefined;
  let closed = false;

  const read = async (): Promise<PolicyState> => {
    try {
      const [row] = await sql<{ version: string; text: string }[]>`
        select version, text from bulkhead_active_policy()`;
      const next = row?.version ?? null;
      if (current && next === version) return current;
      current = await stateOf(row);
      if (version !== undefined) logger.info({ policyVersion: next }, 'the active policy set changed');
      version = next;
    } catch (err) {
      // The database is away (the call would fail anyway): the set held stays. A set that does not load
      // refuses every call until an operator approves one that does.
      if (!(err instanceof Error && err.name === 'PolicySetInvalid') && current) return current;
      logger.error({ err }, 'the active policy set could not be read; every call is refused until it can');
      current = { broken: err instanceof Error ? err.message : String(err) };
      version = undefined;
    }
    return current;
  };
  const refresh = (): Promise<PolicyState> => {
    reading ??= read().finally(() => (reading = undefined));
    return reading;
  };
  const listening = sql.listen(
    POLICY_CHANNEL,
    () => void refresh(),
    () => {
      if (current) void refresh();
    },
  );
  listening.catch(() => {});
  // Read now, so that the first call finds the set at hand.
  void refresh();
  const timer = setInterval(() => {
    if (!closed) void refresh();
  }, options.refreshMs ?? 5000);
  timer.unref();

  return {
    timeZone: options.timeZone ?? 'UTC',
    state: () => current ?? refresh(),
    async close() {
      closed = true;
      clearInterval(timer);
      const l = await listening.catch(() => undefined);
      await l?.unlisten().catch(() => {});
      await reading?.catch(() => {});
    },
  };
}
