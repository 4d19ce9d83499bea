import { isConnectionError, type Sql } from '@bulkhead/db';
import type { TokenProof } from '../call/access.ts';
import {
  boundSession,
  checkedStatements,
  inTransaction,
  sessionLost,
  sessionMarker,
  unprepared,
  SessionMoved,
  type BoundSession,
  type CheckedStatements,
} from './session-check.ts';
import { waitAtMost } from '../call/time-limit.ts';

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
  /** The statement that set the lane's session to its settings, and where: no result read before it may go out if it failed. */
  bound: Promise<BoundSession>;
  /** Set with its settings, in the same statement: a backend that shows it carries them. */
  marker: string;
  /** `bound`'s session, once it is: the calls after the first need not wait for it. */
  session?: BoundSession;
  pid?: number;
  holders: number;
  /** Its connection is reserved (until then the lane waits for one, like any reservation). */
  ready: boolean;
  /** The checked transactions of its calls, each settled once it has ended: released only after them. */
  ends: (() => Promise<void>)[];
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
  /**
   * Statements were seen on another backend than their lane's, again after a retry or on a second call:
   * a pooler shares sessions between clients (`/readyz` fails with the pooler sentence). It stays so
   * until the process restarts, whose start-up check then names the pooler.
   */
  readonly sharesSessions: boolean;
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
export function createReadLanes(
  reads: Sql,
  max: number,
  options: { onSessionMoved?: (err: SessionMoved) => void } = {},
): ReadLanes {
  const byKey = new Map<string, Lane[]>();
  const usage = { lanes: 0, calls: 0 };
  /** Lanes waiting for a connection of the pool. */
  let waiting = 0;
  /** Direct: statements cannot move, and go out unchecked; until a binding tells, they are checked. */
  let route: 'unknown' | 'direct' | 'pooled' = 'unknown';
  let moved = 0; // calls that saw their lane's session move

  const open = (key: string, settings: ReadSettings): Lane => {
    const lane = reserveLane(reads, key, settings, route === 'pooled', {
      settled: stopWaiting,
      // One pooled connection is enough to check every statement from then on.
      bound: (session) => {
        if (route !== 'pooled') route = session.pooled ? 'pooled' : 'direct';
      },
    });
    waiting++;
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
      // A transaction still open would hold the next user's statements: released once they ended.
      (c) => void Promise.all(lane.ends.map((ended) => ended())).finally(() => c.release()),
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
    const key = laneKey(settings);
    const joined = usage.lanes >= max ? joinable(byKey.get(key) ?? [], waiting) : undefined;
    return joined ?? open(key, settings);
  };

  /** One try of a call, on a lane chosen as usual or (`fresh`) on a lane of its own. */
  const attempt = async <T>(
    settings: ReadSettings,
    fn: (conn: Sql) => Promise<T>,
    at: { deadline: number; fresh: boolean },
    onStoppable?: (pid: () => number | undefined) => void,
    signal?: AbortSignal,
  ): Promise<T> => {
    const { deadline } = at;
    const lane = at.fresh ? open(laneKey(settings), settings) : choose(settings);
    lane.holders++;
    usage.calls++;
    onStoppable?.(() => (lane.holders === 1 ? lane.pid : undefined));
    try {
      // A ready lane's connection is there: no wait to bound (a timer and an abort listener fewer a call).
      const conn = await (lane.ready && !signal?.aborted
        ? lane.conn
        : waitAtMost(lane.conn, deadline, settings.timeoutMs, signal));
      return await onLane(lane, conn, fn, {
        checked: route !== 'direct',
        deadline,
        timeoutMs: settings.timeoutMs,
        signal,
        moving,
      });
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

  /** Marks `lane` as one whose session moved, counts it, and returns the error to throw. */
  const moving = (lane: Lane, err = new SessionMoved(lane.pid ?? 0, undefined)): SessionMoved => {
    lane.broken = true;
    moved++;
    options.onSessionMoved?.(err);
    return err;
  };

  // A call whose lane's session moved (or lost its marker) is dropped and tried once more, on a lane of
  // its own: its answer comes only from statements that ran where their lane was bound.
  const run: ReadLanes['run'] = (settings, fn, onStoppable, signal) => {
    const at = { deadline: performance.now() + settings.timeoutMs, fresh: false };
    return attempt(settings, fn, at, onStoppable, signal).catch((err: unknown) => {
      if (!(err instanceof SessionMoved)) throw err;
      return attempt(settings, fn, { ...at, fresh: true }, onStoppable, signal);
    });
  };

  return {
    usage,
    run,
    get sharesSessions() {
      return moved >= 2;
    },
    serves: (timeoutMs) => servesWithin(run, timeoutMs),
  };
}

/**
 * Sets a lane's session to `settings`, and reads its backend's pid. Executed at once, so that it is
 * queued on the connection before anything a call can send on it. Read-only again, in the session: a
 * pooler may drop the startup parameter that opened it so (PgBouncer's `ignore_startup_parameters`),
 * and a read lane must never write.
 */
function bindSession(
  c: Reserved,
  settings: ReadSettings,
  marker: string,
  pooled = false,
): Promise<{ pid: number }[]> {
  const statement = c<{ pid: number }[]>`
    select pg_backend_pid() as pid,
      set_config('bulkhead.lane', ${marker}, false),
      set_config('default_transaction_read_only', 'on', false),
      set_config('bulkhead.customer_id', ${settings.customerId ?? ''}, false),
      set_config('bulkhead.customer_token', ${proofSetting(settings.proof)}, false),
      set_config('statement_timeout', ${timeoutSetting(settings.timeoutMs)}, false)`;
  return (pooled ? unprepared(statement) : statement).execute();
}

/**
 * A lane with `settings` on a connection it reserves from `reads`, its session bound once it comes;
 * `hooks.settled` is told when the reservation succeeded or failed, `hooks.bound` when the binding did.
 */
function reserveLane(
  reads: Sql,
  key: string,
  settings: ReadSettings,
  pooled: boolean,
  hooks: { settled: (lane: Lane) => void; bound: (session: BoundSession) => void },
): Lane {
  let statement: Promise<{ pid: number }[]> | undefined;
  const marker = sessionMarker();
  const conn = reads.reserve().then((c) => {
    statement = bindLane(c, settings, lane, pooled);
    return c;
  });
  const lane: Lane = {
    key,
    conn,
    bound: conn.then(async () => boundSession(await statement!, marker)),
    marker,
    ends: [],
    holders: 0,
    ready: false,
    waiting: true,
    broken: false,
  };
  conn.then(
    () => ((lane.ready = true), hooks.settled(lane)),
    () => ((lane.broken = true), hooks.settled(lane)),
  );
  lane.bound.then(
    (session) => ((lane.session = session), (lane.pid = session.pid), hooks.bound(session)),
    // Its session's settings are unknown: nobody else may join it.
    () => (lane.broken = true),
  );
  return lane;
}

/** True when a call of no customer is served on `run` within `timeoutMs`. */
function servesWithin(run: ReadLanes['run'], timeoutMs: number): Promise<boolean> {
  return waitAtMost(
    run({ customerId: null, timeoutMs }, (conn) => conn`select 1`),
    performance.now() + timeoutMs,
    timeoutMs,
  ).then(
    () => true,
    () => false,
  );
}

/** What {@link onLane} needs besides the lane and the call. */
interface OnLane {
  /** Check every statement (the pool is not known to reach PostgreSQL directly). */
  checked: boolean;
  deadline: number;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** Marks the lane as one whose session moved and returns the error to throw. */
  moving: (lane: Lane, err?: SessionMoved) => SessionMoved;
}

/**
 * Runs `fn` on `lane`'s connection — each statement checked, unless the pool reaches PostgreSQL
 * directly — and returns its value once the lane's binding succeeded and every check saw the lane's
 * session; throws `SessionMoved` when a statement ran elsewhere, whatever `fn` answered.
 */
async function onLane<T>(lane: Lane, conn: Reserved, fn: (conn: Sql) => Promise<T>, o: OnLane): Promise<T> {
  const { deadline, timeoutMs, signal, moving } = o;
  const checked = o.checked ? checkedStatements(conn) : undefined;
  // Bounded: a pooler that withholds an answer must not keep the connection from its pool for ever.
  if (checked)
    lane.ends.push(() =>
      waitAtMost(checked.ended(), performance.now() + timeoutMs, timeoutMs).catch(() => {}),
    );
  let value: T;
  try {
    value = await fn(checked?.sql ?? conn);
  } catch (err) {
    // What failed on a session that moved says nothing about the call (a customer's rows not
    // found, a prepared statement missing): it is tried again instead.
    if (checked && (sessionLost(err) || (await movedUnder(lane, checked, deadline, timeoutMs))))
      throw moving(lane);
    throw err;
  }
  const session =
    lane.session && !signal?.aborted
      ? lane.session
      : await waitAtMost(lane.bound, deadline, timeoutMs, signal);
  // Statements sent unchecked on a pooled connection (before the pool was known to be one) are not trusted.
  if (!checked && session.pooled) throw moving(lane, new SessionMoved(session.pid, undefined));
  if (checked)
    await waitAtMost(checked.settle(session), deadline, timeoutMs, signal).catch((err: unknown) => {
      throw err instanceof SessionMoved ? moving(lane, err) : err;
    });
  return value;
}

/**
 * Binds `lane`'s session on `c` ({@link bindSession}); through a pooler (`pooled`) in a transaction
 * of its own, the only way its describe-then-bind stays on one server connection, released after it.
 */
function bindLane(
  c: Reserved,
  settings: ReadSettings,
  lane: Lane,
  pooled: boolean,
): Promise<{ pid: number }[]> {
  if (!pooled) return bindSession(c, settings, lane.marker);
  const bound = inTransaction(c, () => bindSession(c, settings, lane.marker, true));
  lane.ends.push(() => bound.ended);
  return bound.sent;
}

/** Lanes with the same key have the same settings. */
const laneKey = (settings: ReadSettings) =>
  `${settings.customerId ?? ''}\u0000${proofSetting(settings.proof)}\u0000${timeoutSetting(settings.timeoutMs)}`;

/**
 * Whether a call that failed on `lane` did so because its session moved: its lane's binding and the
 * checks of what it sent, as far as they answer before the call's deadline (if they do not, or fail,
 * it is the call's own error that counts).
 */
async function movedUnder(
  lane: Lane,
  checked: CheckedStatements,
  deadline: number,
  timeoutMs: number,
): Promise<boolean> {
  try {
    const session = await waitAtMost(lane.bound, deadline, timeoutMs);
    await waitAtMost(checked.settle(session), deadline, timeoutMs);
    return false;
  } catch (err) {
    return err instanceof SessionMoved;
  }
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
