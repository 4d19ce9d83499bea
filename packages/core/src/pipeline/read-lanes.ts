import { isConnectionError, type Sql } from '@bulkhead/db';
import type { TokenProof } from './access.ts';
import { waitAtMost } from './time-limit.ts';

/**
 * The settings a read-only call runs under: its customer, the proof of the token the row policies derive
 * the customer from (none: no customer rows), and its time limit.
 */
export interface ReadSettings {
  /** Informative only (`bulkhead.customer_id`): no row policy trusts what the session can set itself. */
  customerId: string | null;
  proof?: TokenProof | undefined;
  timeoutMs: number;
}

/** The proof as `bulkhead.customer_token` takes it: empty when the call presented none. */
export const proofSetting = (proof: TokenProof | undefined) => proof?.setting ?? '';

/** A time limit as `statement_timeout` takes it: whole milliseconds, at least one (0 would mean none). */
export const timeoutSetting = (ms: number) => String(Math.max(1, Math.ceil(ms)));

type Reserved = Awaited<ReturnType<Sql['reserve']>>;

/** A connection of the read pool, reserved while calls with the same settings use it. */
interface Lane {
  key: string;
  conn: Promise<Reserved>;
  /** The statement that set the lane's session to its settings, with the backend's pid: no result read before it may go out if it failed. */
  bound: Promise<number>;
  pid?: number;
  holders: number;
  /** Its connection is reserved (until then the lane waits for one, like any reservation). */
  ready: boolean;
  /** Counted among the lanes waiting for a connection: until it has one, or is closed without. */
  waiting: boolean;
  /**
   * Its connection was lost, its settings could not be set, or a call waited for either past its time
   * limit: it takes no more calls, and goes back to the pool once its calls are done (or, if its
   * connection comes only after that, as soon as it comes).
   */
  broken: boolean;
}

/** The read pool, served as lanes: see {@link createReadLanes}. */
export interface ReadLanes {
  /**
   * Runs `fn` on a lane whose session carries `settings`, and returns its value only once the
   * statement that set them has succeeded. `onStoppable` receives how to find the backend a withdrawn
   * call may cancel: the lane's, while this call is its only one; none while others share it.
   *
   * Waiting for the lane's connection, and for the statement that sets its settings, is bounded by
   * `settings.timeoutMs` from the start of the call (a `NoConnectionInTime` then) and by
   * `signal` (a `Cancelled`); `fn` bounds its own work.
   */
  run<T>(
    settings: ReadSettings,
    fn: (conn: Sql) => Promise<T>,
    onStoppable?: (pid: () => number | undefined) => void,
    signal?: AbortSignal,
  ): Promise<T>;
  /** True when a call of no customer is served within `timeoutMs` (`/readyz`). */
  serves(timeoutMs: number): Promise<boolean>;
  /** Lanes reserved or waiting for a connection now, and the calls on them (for tests). */
  readonly usage: { lanes: number; calls: number };
}

/**
 * Serves read-only calls from a pool opened read-only (`createSql(url, { readOnly: true })`) that
 * serves nothing else, so that a read costs about what it costs on a plain pool.
 *
 * A lane is a connection of that pool reserved for calls with the same settings (customer and time
 * limit). Its first statement sets them for the session — pipelined with the first call's first
 * query — and every call with the same settings that arrives while the lane is in use joins it:
 * their queries go out pipelined on the one connection, many in one write, as a plain pool would send
 * them, and no call's query ever runs under another's settings, because a lane's settings never change
 * while it is reserved (a lane with the wrong settings is never joined; a connection comes back with
 * new settings only after its last call). New lanes are reserved while the pool has room; when it has
 * none, a call joins the least busy lane with its settings, or waits for a connection like any other
 * reservation — and once a call of other settings waits, calls stop joining busy lanes, so that a
 * busy customer's lanes drain and the waiting call gets its turn.
 *
 * What sharing costs: a slow query delays the calls of the same customer queued behind it on its lane
 * (never another customer's), and a withdrawn call's query is cancelled only while the call has its
 * lane to itself (otherwise it runs until it finishes or hits the statement timeout).
 *
 * When a connection dies: the calls on its lane fail with a connection error (postgres.js fails what
 * was sent on it, and refuses what a reservation whose connection closed is given), the first such
 * error marks the lane broken, so that no call joins it again, and the lane goes back to the pool
 * with its last call. A call never waits longer than its time limit for a lane's connection: past
 * it, it fails (`NoConnectionInTime`, "could not reach the database; try again") and marks the lane
 * broken too; a connection that comes for a lane nobody holds any more is released at once.
 */
export function createReadLanes(reads: Sql, max: number): ReadLanes {
  const byKey = new Map<string, Lane[]>();
  const usage = { lanes: 0, calls: 0 };
  /** Lanes waiting for a connection of the pool. */
  let waiting = 0;

  const open = (key: string, settings: ReadSettings): Lane => {
    let statement: Promise<{ pid: number }[]> | undefined;
    const conn = reads.reserve().then((c) => {
      statement = bindSession(c, settings);
      return c;
    });
    const lane: Lane = {
      key,
      conn,
      bound: conn.then(async () => (await statement!)[0]!.pid),
      holders: 0,
      ready: false,
      waiting: true,
      broken: false,
    };
    waiting++;
    conn.then(
      () => {
        lane.ready = true;
        stopWaiting(lane);
      },
      () => {
        lane.broken = true;
        stopWaiting(lane);
      },
    );
    lane.bound.then(
      (pid) => (lane.pid = pid),
      // Its session's settings are unknown: nobody else may join it.
      () => (lane.broken = true),
    );
    byKey.set(key, [...(byKey.get(key) ?? []), lane]);
    usage.lanes++;
    return lane;
  };

  const stopWaiting = (lane: Lane) => {
    if (!lane.waiting) return;
    lane.waiting = false;
    waiting--;
  };

  const close = (lane: Lane) => {
    const rest = (byKey.get(lane.key) ?? []).filter((l) => l !== lane);
    if (rest.length) byKey.set(lane.key, rest);
    else byKey.delete(lane.key);
    usage.lanes--;
    // A lane given up before its connection came waits no more: calls may join ready lanes again.
    stopWaiting(lane);
    lane.conn.then(
      (c) => c.release(),
      () => {},
    );
  };

  /**
   * A new lane while the pool has room; else the least busy lane with the same settings, unless
   * calls wait for a connection (then joining would keep a busy customer's lanes from ever draining);
   * else the least busy lane with the same settings that waits for a connection itself; else a new
   * lane that waits its turn in the pool's queue.
   */
  const choose = (settings: ReadSettings): Lane => {
    // By token, not by customer: a lane proves one token, and a revoked one must not fence another's calls out.
    const key = `${settings.customerId ?? ''}\u0000${proofSetting(settings.proof)}\u0000${timeoutSetting(settings.timeoutMs)}`;
    const joined = usage.lanes >= max ? joinable(byKey.get(key) ?? [], waiting) : undefined;
    return joined ?? open(key, settings);
  };

  const run: ReadLanes['run'] = async (settings, fn, onStoppable, signal) => {
    const deadline = performance.now() + settings.timeoutMs;
    const lane = choose(settings);
    lane.holders++;
    usage.calls++;
    onStoppable?.(() => (lane.holders === 1 ? lane.pid : undefined));
    try {
      const conn = await waitAtMost(lane.conn, deadline, settings.timeoutMs, signal);
      const value = await fn(conn);
      await waitAtMost(lane.bound, deadline, settings.timeoutMs, signal);
      return value;
    } catch (err) {
      // A lane that lost its connection, or kept a call waiting past its limit, is joined no more.
      if (isConnectionError(err)) lane.broken = true;
      throw err;
    } finally {
      lane.holders--;
      usage.calls--;
      if (lane.holders === 0) close(lane);
    }
  };

  return {
    usage,
    run,
    serves: (timeoutMs) =>
      waitAtMost(
        run({ customerId: null, timeoutMs }, (conn) => conn`select 1`),
        performance.now() + timeoutMs,
        timeoutMs,
      ).then(
        () => true,
        () => false,
      ),
  };
}

/**
 * Sets a lane's session to `settings`, and reads its backend's pid. Executed at once, so that it is
 * queued on the connection before anything a call can send on it. Read-only again, in the session: a
 * pooler may drop the startup parameter that opened it so (PgBouncer's `ignore_startup_parameters`),
 * and a read lane must never write.
 */
function bindSession(c: Reserved, settings: ReadSettings): Promise<{ pid: number }[]> {
  return c<{ pid: number }[]>`
    select pg_backend_pid() as pid,
      set_config('default_transaction_read_only', 'on', false),
      set_config('bulkhead.customer_id', ${settings.customerId ?? ''}, false),
      set_config('bulkhead.customer_token', ${proofSetting(settings.proof)}, false),
      set_config('statement_timeout', ${timeoutSetting(settings.timeoutMs)}, false)`.execute();
}

/**
 * Of the lanes with the same settings, when the pool is full: the least busy ready one, unless `waiting`
 * lanes wait for a connection; else the least busy one that waits for a connection itself; else none.
 */
function joinable(lanes: readonly Lane[], waiting: number): Lane | undefined {
  let ready: Lane | undefined;
  let pending: Lane | undefined;
  for (const lane of lanes) {
    if (lane.broken) continue;
    if (lane.ready) {
      if (!ready || lane.holders < ready.holders) ready = lane;
    } else if (!pending || lane.holders < pending.holders) pending = lane;
  }
  if (ready && waiting === 0) return ready;
  return pending;
}
