import { randomUUID } from 'node:crypto';
import type { Sql } from '@bulkhead/db';

/**
 * What a connection's session was bound with: the backend that ran the binding statement, the marker
 * that statement set (`bulkhead.lane`, in the same statement as the settings, so a backend that shows
 * the marker shows the settings), and whether something stands between the client and that backend.
 */
export interface BoundSession {
  pid: number;
  marker: string;
  /**
   * The connection's BackendKeyData names another process than the backend that answered: a pooler
   * (PgBouncer makes up its own key for every client, in any mode) — a statement may then run on
   * another backend than the one bound. Directly connected (or through a TCP proxy), it never can.
   */
  pooled: boolean;
}

/**
 * A statement of a session-bound connection ran on another backend than the one bound, or on one that
 * no longer carries its marker: a pooler shares sessions between clients, so nothing the statement
 * answered can be trusted. A connection error (`CONNECTION_CLOSED`): the session is gone as surely as
 * if the connection had been lost, and a call answers that it could not reach the database.
 */
export class SessionMoved extends Error {
  override readonly name = 'SessionMoved';
  readonly code = 'CONNECTION_CLOSED';
  constructor(
    readonly bound: number,
    readonly seen: number | undefined,
  ) {
    super(
      `a statement ran on backend ${seen ?? 'unknown'}, not on backend ${bound} that the session was bound on: ` +
        'a connection pooler shares sessions between clients',
    );
  }
}

/** A marker of one binding of a session: random, so that no other binding sets the same. */
export const sessionMarker = (): string => randomUUID();

/** The session a binding statement's result (it selects `pg_backend_pid() as pid`) tells of. */
export function boundSession(result: readonly { pid: number }[], marker: string): BoundSession {
  const pid = result[0]!.pid;
  // postgres.js keeps the connection's BackendKeyData on each result.
  const key = (result as { state?: { pid?: number } }).state?.pid;
  return { pid, marker, pooled: key !== pid };
}

type Check = { pid: number; marker: string | null };

/**
 * What `send` sends on `conn`, between `begin` and `commit` queued in the same tick: one transaction,
 * which a transaction pooler keeps on one server connection, and in which postgres.js may describe a
 * statement before binding it (a `Flush`, no `Sync`) without the pooler handing the server to another
 * client in between. `ended` settles (never rejects) once the transaction has ended; a statement that
 * failed leaves it aborted, and `commit` then rolls it back without an error.
 */
export function inTransaction<T>(conn: Sql, send: () => T): { sent: T; ended: Promise<void> } {
  unprepared(conn`begin`)
    .execute()
    .catch(() => {});
  const sent = send();
  const ended = unprepared(conn`commit`)
    .execute()
    .then(
      () => {},
      () => {},
    );
  return { sent, ended };
}

/**
 * An error that only a session moved between statements explains: a statement this connection
 * prepared is missing (26000), or, postgres.js having prepared it again inside the transaction that
 * error aborted, the transaction is (25P02).
 */
export const sessionLost = (err: unknown): boolean =>
  ['26000', '25P02'].includes((err as { code?: unknown } | null)?.code as string);

/** Makes a postgres.js query an unnamed statement: never prepared, so never sent again on its own. */
export function unprepared<T>(query: T): T {
  const options = (query as { options?: { prepare?: boolean } }).options;
  if (options) options.prepare = false;
  return query;
}

/** Methods of a postgres.js query that send it. */
const SENDS = new Set(['then', 'catch', 'finally', 'execute', 'forEach', 'cursor', 'describe']);

/** A connection whose statements check their session: see {@link checkedStatements}. */
export interface CheckedStatements {
  sql: Sql;
  /**
   * Waits for the checks of every statement sent so far and throws {@link SessionMoved} when one ran
   * on another backend than `bound`'s or without its marker; a check that failed (its connection lost)
   * throws its error.
   */
  settle(bound: BoundSession): Promise<void>;
  /**
   * Settles once every transaction opened so far has ended: the connection may go back to its pool only
   * then (postgres.js forgets what a released reservation still queues: an unsent `commit` would leave
   * the session in a transaction for its next user).
   */
  ended(): Promise<void>;
}

/**
 * `conn` as a caller sees it, with every statement it sends checked: each goes out as
 * `begin` · the check (`pg_backend_pid()` and the marker) · the statement · `commit`, queued in one
 * tick, so that they leave in one write (no round trip added) and — a transaction being the one
 * thing a transaction pooler keeps on one server connection — the check proves where the statement
 * itself ran. Fragments (never sent) and helpers (`sql(rows)`) pass through unchanged.
 */
export function checkedStatements(conn: Sql): CheckedStatements {
  const checks: Promise<Check[]>[] = [];
  const commits: Promise<unknown>[] = [];
  const sendChecked = (send: () => unknown): unknown => {
    const { sent, ended } = inTransaction(conn, () => {
      const check = unprepared(conn<Check[]>`
        select pg_backend_pid() as pid, current_setting('bulkhead.lane', true) as marker`).execute();
      check.catch(() => {});
      checks.push(check);
      return send();
    });
    commits.push(ended);
    return sent;
  };
  const query = (q: object): object => {
    let sent = false;
    const proxy: object = new Proxy(q, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const call = () => (value as (...a: unknown[]) => unknown).apply(target, args);
          // Unprepared: postgres.js sends a prepared statement that went missing (26000) once more on its
          // own — after this transaction's commit, unchecked, wherever the pooler puts it.
          if (typeof prop === 'string' && SENDS.has(prop) && !sent) unprepared(target);
          const out =
            typeof prop === 'string' && SENDS.has(prop) && !sent
              ? ((sent = true), sendChecked(call))
              : call();
          // Modifiers (`values()`, `raw()`, `simple()`) return the query itself: it stays checked.
          return out === target ? proxy : out;
        };
      },
    });
    return proxy;
  };
  const wrapped = (out: unknown) =>
    out instanceof Promise && typeof (out as { execute?: unknown }).execute === 'function' ? query(out) : out;
  const sql = new Proxy(conn, {
    apply(target, self, args) {
      return wrapped(Reflect.apply(target as never, self, args));
    },
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if ((prop === 'unsafe' || prop === 'file') && typeof value === 'function')
        return (...args: unknown[]) => wrapped((value as (...a: unknown[]) => unknown).apply(target, args));
      return value;
    },
  }) as Sql;
  return {
    sql,
    ended: () => Promise.all(commits).then(() => {}),
    async settle(bound) {
      const seen = await Promise.all(checks);
      for (const [row] of seen)
        if (row?.pid !== bound.pid || row.marker !== bound.marker)
          throw new SessionMoved(bound.pid, row?.pid);
    },
  };
}
