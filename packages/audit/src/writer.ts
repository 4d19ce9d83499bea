import { isConnectionError, type Sql } from '@bulkhead/db';
import { STORED_COLUMN_NAMES, storedRow } from './columns.ts';
import type { AuditEventInput, StoredEventFields } from './events.ts';
import { normaliseEvent } from './normalise.ts';

/** postgres.js's transaction type, reached through `begin` so that audit needs no direct dependency on postgres. */
type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

/** Writes audit events. Every promise resolves once the event is committed (or, in a transaction, part of it). */
export interface AuditWriter {
  /**
   * Appends an event on its own. Events appended at about the same time are committed together in one
   * statement (one round trip for the batch); the promise resolves when the batch has committed.
   */
  append(input: AuditEventInput): Promise<StoredEventFields>;
  /** Appends an event inside `tx`: it commits with the transaction's other effects, or not at all. */
  appendIn(tx: TransactionSql | Sql, input: AuditEventInput): Promise<StoredEventFields>;
  /**
   * Appends an event that must not be lost though its caller cannot wait for the database: a refusal
   * answered while the database is unreachable. If the database cannot be reached the event is held in
   * memory (up to `maxHeld`) and written, marked with when it was held, once the database is back.
   * Resolves once the event is written or held, or after `keepWaitMs` with the write still going on;
   * rejects only when the database refuses the event within that time.
   */
  keep(input: AuditEventInput): Promise<void>;
  /**
   * Resolves when the log can take an event now (database reachable, insert allowed, the login not
   * reconfigured by itself); rejects otherwise.
   */
  check(): Promise<void>;
  /** Waits for events still being written, and tries once more to write the held ones. */
  flush(): Promise<void>;
  /** Events held for an unreachable database and not yet written, and those dropped because the hold was full. */
  readonly held: { waiting: number; dropped: number };
}

/** Options of {@link createAuditWriter}. */
export interface AuditWriterOptions {
  /** Most events in one statement (default 500). */
  maxBatch?: number;
  /**
   * Batches in flight at once (default 1): what arrives while one commits waits and goes in the next,
   * so a busy server writes several events per statement and commit, not one each.
   */
  maxInFlight?: number;
  /**
   * While the server is busy (its last batch held two events or more), how long a batch waits for
   * company after its first event arrived (default 5 ms; 0 never waits). A statement and commit of one
   * event costs PostgreSQL about five times the CPU per event of one of ten, and at 50 connections the
   * calls wait on each other far longer than this anyway. Once batches hold one event again (a quiet
   * server), events are written at once; only the first event after a busy spell may still wait.
   */
  lingerMs?: number;
  /** Most events held while the database is unreachable (default 10,000); beyond it they are counted as dropped. */
  maxHeld?: number;
  /** How often held events are retried (default 1,000 ms). */
  retryMs?: number;
  /**
   * How long `keep` waits for its event (default 1,000 ms) before it resolves and lets the write, or
   * the hold, finish behind it. A database that stalls rather than refuses (a proxy with no primary
   * during a failover accepts connections and lets them time out) would otherwise keep a refusal's
   * answer waiting through every queued batch's connect timeout: 10 s and more.
   */
  keepWaitMs?: number;
}

const ROW_COLUMNS = STORED_COLUMN_NAMES.join(', ');

/** One statement, one parameter, any number of rows; the database stamps number, time, role and server. */
async function insertRows(sql: TransactionSql | Sql, events: StoredEventFields[]): Promise<void> {
  await sql`
    insert into audit_events (${sql.unsafe(ROW_COLUMNS)})
    select ${sql.unsafe(ROW_COLUMNS)} from jsonb_populate_recordset(null::audit_events, ${sql.json(events.map(storedRow) as never)})`;
}

/** The event is stored already: an earlier attempt committed, and only its answer was lost. */
const isDuplicate = (err: unknown) => (err as { code?: string }).code === '23505';

interface Pending {
  event: StoredEventFields;
  /** When it was appended (`performance.now()`). */
  at: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Group commit: events appended at about the same time are written by one statement. */
interface Batcher {
  /** Resolves with the event once the batch it went in has committed. */
  enqueue(event: StoredEventFields): Promise<StoredEventFields>;
  /** Resolves once no event waits or is being written. */
  idle(): Promise<void>;
}

/**
 * What arrives while a batch is being written goes in the next one, and while the server is busy a
 * batch waits up to `lingerMs` for company.
 */
function createBatcher(
  sql: Sql,
  options: { maxBatch: number; maxInFlight: number; lingerMs: number },
): Batcher {
  const { maxBatch, maxInFlight, lingerMs } = options;
  let queue: Pending[] = [];
  let inFlight = 0;
  let scheduled = false;
  /** The last batch held two events or more: batches wait up to `lingerMs` for company. */
  let busy = false;
  const idle: (() => void)[] = [];

  const settle = () => {
    if (queue.length === 0 && inFlight === 0) for (const done of idle.splice(0)) done();
  };

  const write = async (batch: Pending[]) => {
    busy = batch.length >= 2;
    try {
      await insertRows(
        sql,
        batch.map((p) => p.event),
      );
      for (const p of batch) p.resolve();
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
      // One event the database refused must not take the others with it.
      await Promise.all(batch.map((p) => write([p])));
    }
  };

  const drain = () => {
    scheduled = false;
    while (queue.length && inFlight < maxInFlight) {
      const wait = busy && queue.length < maxBatch ? queue[0]!.at + lingerMs - performance.now() : 0;
      if (wait >= 1) {
        scheduled = true;
        setTimeout(drain, wait);
        return;
      }
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      inFlight++;
      void write(batch).finally(() => {
        inFlight--;
        if (queue.length) schedule();
        settle();
      });
    }
  };

  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    // After the current turn of the event loop: events appended by other requests in it join the batch.
    setImmediate(drain);
  };

  return {
    enqueue: (event) =>
      new Promise<StoredEventFields>((resolve, reject) => {
        queue.push({ event, at: performance.now(), resolve: () => resolve(event), reject });
        schedule();
      }),
    async idle() {
      if (queue.length || inFlight) await new Promise<void>((resolve) => idle.push(resolve));
    },
  };
}

/** Events held while the database is unreachable, written once it is back. */
interface Hold {
  /** Held and not yet written; dropped because the hold was full. */
  readonly held: { waiting: number; dropped: number };
  /** Holds an event, marked with when it was held, and starts retrying. */
  add(event: StoredEventFields): void;
  /** Tries once more to write the held events (if there are any). */
  flush(): Promise<void>;
}

function createHold(sql: Sql, options: { maxBatch: number; maxHeld: number; retryMs: number }): Hold {
  const { maxBatch, maxHeld, retryMs } = options;
  const held = { waiting: 0, dropped: 0 };
  let holding: StoredEventFields[] = [];
  let retrying: Promise<void> | undefined;
  let retryTimer: NodeJS.Timeout | undefined;

  /**
   * Writes the held events, oldest first. An event whose id is already stored was written by an
   * attempt whose answer was lost with the connection: it counts as written, never twice.
   */
  const retryHeld = (): Promise<void> =>
    (retrying ??= (async () => {
      try {
        while (holding.length) {
          const batch = holding.slice(0, maxBatch);
          await insertRows(sql, batch).catch(async (err: unknown) => {
            if (!isDuplicate(err)) throw err;
            for (const e of batch)
              await insertRows(sql, [e]).catch((one: unknown) => {
                if (!isDuplicate(one)) throw one;
              });
          });
          holding = holding.slice(batch.length);
          held.waiting = holding.length;
        }
      } catch {
        // Still unreachable: the timer tries again.
      } finally {
        retrying = undefined;
        if (holding.length === 0 && retryTimer) {
          clearInterval(retryTimer);
          retryTimer = undefined;
        }
      }
    })());

  return {
    held,
    add(event) {
      if (holding.length >= maxHeld) {
        held.dropped++;
        return;
      }
      const since = new Date().toISOString();
      const summary = event.resultSummary;
      const fields =
        summary && typeof summary === 'object' && !Array.isArray(summary) ? summary : { summary };
      holding.push({ ...event, resultSummary: { ...fields, held_since: since } });
      held.waiting = holding.length;
      if (!retryTimer) {
        retryTimer = setInterval(() => void retryHeld(), retryMs);
        retryTimer.unref();
      }
    },
    async flush() {
      if (holding.length) await retryHeld();
    },
  };
}

/**
 * Appending costs at most one round trip and takes no lock shared between processes: the database
 * numbers each event from a sequence and stamps its time, the writing role and (for a server's role)
 * the server. Integrity does not come from here but from the sealer, off the request path
 * (`sealLog`). Events appended outside a transaction are group-committed: what arrives while a batch
 * is being written goes in the next one, and while the server is busy a batch waits a few
 * milliseconds for company (`lingerMs`), so a busy server writes many events per statement.
 */
export function createAuditWriter(sql: Sql, options: AuditWriterOptions = {}): AuditWriter {
  const maxBatch = options.maxBatch ?? 500;
  const keepWaitMs = options.keepWaitMs ?? 1_000;
  const batcher = createBatcher(sql, {
    maxBatch,
    maxInFlight: options.maxInFlight ?? 1,
    lingerMs: options.lingerMs ?? 5,
  });
  const hold = createHold(sql, {
    maxBatch,
    maxHeld: options.maxHeld ?? 10_000,
    retryMs: options.retryMs ?? 1_000,
  });

  return {
    held: hold.held,
    append(input) {
      return batcher.enqueue(normaliseEvent(input));
    },
    async keep(input) {
      const event = normaliseEvent(input);
      const kept = batcher.enqueue(event).catch((err: unknown) => {
        if (!isConnectionError(err)) throw err;
        hold.add(event);
      });
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<'waited'>(
        (resolve) => (timer = setTimeout(() => resolve('waited'), keepWaitMs)),
      );
      const first = await Promise.race([kept, waited]).finally(() => clearTimeout(timer));
      // Past the wait the write goes on alone; a refusal by the database that late is not reported.
      if (first === 'waited') kept.catch(() => {});
    },
    async appendIn(tx, input) {
      const event = normaliseEvent(input);
      await insertRows(tx, [event]);
      return event;
    },
    async check() {
      const [row] = await sql<{ ok: boolean; changed: string[] }[]>`
        select has_table_privilege(current_user, 'audit_events', 'INSERT') as ok,
          public.bulkhead_login_settings_changed() as changed`;
      if (!row?.ok) throw new Error('the audit log refuses inserts from this role');
      // The database refuses every event of a login that stored settings for itself (0048).
      if (row.changed.length)
        throw new Error(
          `the audit log refuses this login: it has reconfigured itself (ALTER ROLE … SET ${row.changed.join(', ')}); an administrator must run ALTER ROLE … RESET ALL and \`bulkhead db roles --login\` again`,
        );
    },
    async flush() {
      await batcher.idle();
      await hold.flush();
    },
  };
}
