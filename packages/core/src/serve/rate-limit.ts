import type { Sql } from '@bulkhead/db';
import { inSpan, ROOT_CONTEXT } from '../pipeline/observability/tracing.ts';

/** Per-token request limit, answered from memory and reconciled across replicas through Postgres. */
export interface RateLimiter {
  /**
   * Whether `units` more requests of this token (default 1; the messages of a batch count one each)
   * may proceed now; counts them when they may, and none of them when they may not.
   */
  take(tokenId: string, units?: number): { ok: boolean; retryAfterSeconds: number };
  /** Sends this process's new counts and learns everyone's (runs every `syncIntervalMs` by itself). */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** Options of {@link createRateLimiter}. */
export interface RateLimiterOptions {
  /** How often counts are exchanged with the other replicas (default 1 s). */
  syncIntervalMs?: number;
  /** The clock (tests move it across a minute boundary). */
  now?: () => number;
}

const MINUTE = 60_000;

interface Window {
  /** Requests this process admitted in the window. */
  local: number;
  /** Of those, not yet sent to the database. */
  unsynced: number;
  /** Requests the other replicas admitted in the window, as of the last exchange. */
  remote: number;
}

/** Each token's windows, by the millisecond their minute starts. */
type Windows = Map<string, Map<number, Window>>;

/** What this process admitted and has not sent yet: `n` requests of `token` in the window from `start`. */
interface Delta {
  token: string;
  start: number;
  n: number;
}

/** A token's total in one window, across all replicas, as the database has it. */
interface ExchangedCount {
  token: string;
  start: number;
  count: number;
}

/** The window of `tokenId` that starts at `start`, empty when it is new. */
function windowOf(tokens: Windows, tokenId: string, start: number): Window {
  let windows = tokens.get(tokenId);
  if (!windows) {
    windows = new Map();
    tokens.set(tokenId, windows);
  }
  let w = windows.get(start);
  if (!w) {
    w = { local: 0, unsynced: 0, remote: 0 };
    windows.set(start, w);
  }
  return w;
}

/**
 * The counts not sent yet, taken out of `unsynced` (the caller puts them back when the exchange
 * fails). Windows before the previous minute count no more: they are dropped on the way, and a token
 * left without any with them.
 */
function takeUnsynced(tokens: Windows, current: number): Delta[] {
  const deltas: Delta[] = [];
  for (const [token, windows] of tokens) {
    for (const [start, w] of windows) {
      if (start < current - MINUTE) {
        windows.delete(start);
        continue;
      }
      if (w.unsynced > 0) deltas.push({ token, start, n: w.unsynced });
    }
    if (windows.size === 0) tokens.delete(token);
  }
  for (const d of deltas) windowOf(tokens, d.token, d.start).unsynced -= d.n;
  return deltas;
}

/**
 * Adds `deltas` to the shared counts and reads back the totals of `ids` since `since`, in one
 * statement, through the function that alone touches the table (no server role holds a privilege
 * on it). Off the request path (a request is answered from memory): a trace of its own each time.
 */
function exchangeCounts(
  sql: Sql,
  deltas: Delta[],
  ids: string[],
  since: number,
  cleanup: boolean,
): Promise<ExchangedCount[]> {
  const attributes = { 'bulkhead.rate_limit.tokens': ids.length };
  return inSpan(
    'rate limit sync',
    { attributes },
    () =>
      sql<ExchangedCount[]>`
        select token_id as token, window_start_ms as start, count
        from bulkhead_rate_limit_exchange(${deltas.map((d) => d.token)}::text[], ${deltas.map((d) => d.start)}::float8[],
          ${deltas.map((d) => d.n)}::int[], ${ids}::text[], to_timestamp(${since / 1000}), ${cleanup})`.then(
        (r) => r,
      ),
    ROOT_CONTEXT,
  );
}

/**
 * A sliding-window limit of `perMinute` requests per token: the count of the
 * current minute plus the previous minute's count weighted by how much of it
 * still lies within the last 60 seconds — so a burst at the end of one minute
 * and another at the start of the next cannot together pass twice the limit.
 *
 * Every request is answered from memory. Every `syncIntervalMs` each process
 * adds its new counts to `bulkhead_rate_limits` and reads back the totals of
 * the tokens it serves in one call of `bulkhead_rate_limit_exchange`, learning
 * what the other replicas admitted. So across replicas the limit can be exceeded only by what the
 * others admitted since the last exchange: at most one interval's worth of
 * their traffic (with a burst arriving at all R replicas at once, at most R
 * times the remaining allowance).
 */
export function createRateLimiter(
  sql: Sql,
  perMinute: number,
  options: RateLimiterOptions = {},
): RateLimiter {
  const now = options.now ?? Date.now;
  const interval = options.syncIntervalMs ?? 1000;
  const tokens = new Map<string, Map<number, Window>>();
  let syncing: Promise<void> | undefined;
  let lastCleanup = 0;

  const window = (tokenId: string, start: number) => windowOf(tokens, tokenId, start);

  const doSync = async () => {
    const t = now();
    const current = Math.floor(t / MINUTE) * MINUTE;
    const deltas = takeUnsynced(tokens, current);
    const ids = [...tokens.keys()];
    if (!ids.length) return;
    const cleanup = t - lastCleanup > 10 * MINUTE;
    let rows: ExchangedCount[];
    try {
      rows = await exchangeCounts(sql, deltas, ids, current - MINUTE, cleanup);
    } catch (err) {
      for (const d of deltas) window(d.token, d.start).unsynced += d.n;
      throw err;
    }
    if (cleanup) lastCleanup = t;
    for (const r of rows) {
      const w = tokens.get(r.token)?.get(r.start);
      if (!w) continue;
      // What this process sent is in the total; the rest came from the others.
      w.remote = Math.max(0, r.count - (w.local - w.unsynced));
    }
  };

  const sync = () => {
    syncing ??= doSync().finally(() => {
      syncing = undefined;
    });
    return syncing;
  };
  const timer = perMinute > 0 ? setInterval(() => void sync().catch(() => {}), interval) : undefined;
  timer?.unref();

  return {
    take(tokenId, units = 1) {
      if (perMinute <= 0) return { ok: true, retryAfterSeconds: 0 };
      const t = now();
      const start = Math.floor(t / MINUTE) * MINUTE;
      const elapsed = (t - start) / MINUTE;
      const cur = window(tokenId, start);
      const prev = tokens.get(tokenId)?.get(start - MINUTE);
      const prevTotal = prev ? prev.local + prev.remote : 0;
      const curTotal = cur.local + cur.remote;
      if (prevTotal * (1 - elapsed) + curTotal + units <= perMinute) {
        cur.local += units;
        cur.unsynced += units;
        return { ok: true, retryAfterSeconds: 0 };
      }
      // When the weighted previous minute will have shrunk enough (or, if this minute alone is full, the next minute).
      const until =
        curTotal + units > perMinute || prevTotal === 0
          ? start + MINUTE - t
          : (1 - (perMinute - units - curTotal) / prevTotal - elapsed) * MINUTE;
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(until / 1000)) };
    },
    sync,
    async close() {
      clearInterval(timer);
      await sync().catch(() => {});
    },
  };
}
