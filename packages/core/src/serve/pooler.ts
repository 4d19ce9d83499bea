import { randomUUID } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { StartupError } from './stdio.ts';

type ReservedSql = Awaited<ReturnType<Sql['reserve']>>;

/**
 * What a server needs of a connection pooler between it and PostgreSQL, in one sentence: read lanes keep
 * the customer in the session and the token cache LISTENs, so every client connection must be a session
 * of its own.
 */
export const POOLER_NEEDS =
  "Bulkhead keeps settings in each connection's session and LISTENs for token revocations, so it needs a session of its own " +
  'for every connection: use PgBouncer with `pool_mode = session` (and `ignore_startup_parameters = default_transaction_read_only`), ' +
  'or connect to PostgreSQL directly';

/**
 * The one sentence for a pooler found to share sessions: at start (`checkPooler` refuses to start with
 * it) and at run time (`/readyz` fails with it once read lanes saw their sessions move).
 */
export const SESSIONS_SHARED =
  "DATABASE_URL leads to a connection pooler that does not keep a connection's session between its statements " +
  `(PgBouncer in transaction or statement mode): ${POOLER_NEEDS}`;

/**
 * Refuses a connection pooler that does not give each connection a session of its own (PgBouncer in
 * transaction or statement mode), and one that refuses the read pool's startup parameter
 * (`default_transaction_read_only`): either would have calls fail while `/readyz` may say ready.
 *
 * The probe: on two connections of the main pool, each reserved, the first sets a session setting to
 * a value of its own, the second sets the same setting to another, and the first reads it back with
 * its backend's pid — three rounds. On a session of its own the value and the pid are the ones the
 * first statement saw; behind a transaction pooler a later statement runs on whatever server
 * connection is free (often the one the other connection just used), so one of them differs. Its
 * statements are unnamed (`prepare: false`): a named one would fail behind such a pooler
 * ("prepared statement … does not exist") instead of telling.
 */
export async function checkPooler(sql: Sql, reads?: Sql): Promise<void> {
  // Both settled before going on: when one connection is refused (the login's limit reached), the other is
  // released rather than kept reserved, and nothing is still connecting when the process stops.
  const reserved = await Promise.allSettled([sql.reserve(), sql.reserve()]);
  const refused = reserved.find((r) => r.status === 'rejected');
  if (refused) {
    for (const r of reserved) if (r.status === 'fulfilled') r.value.release();
    throw refused.reason;
  }
  const [a, b] = reserved.map((r) => (r as PromiseFulfilledResult<ReservedSql>).value) as [
    ReservedSql,
    ReservedSql,
  ];
  try {
    const once = async (c: typeof a, text: string, params: string[] = []) =>
      (await c.unsafe<{ pid: number; value: string | null }[]>(text, params, { prepare: false }))[0]!;
    for (let round = 0; round < 3; round++) {
      const mark = randomUUID();
      const set = await once(
        a,
        `select pg_backend_pid() as pid, set_config('bulkhead.pool_probe', $1, false) as value`,
        [mark],
      );
      await once(b, `select pg_backend_pid() as pid, set_config('bulkhead.pool_probe', $1, false) as value`, [
        randomUUID(),
      ]);
      const read = await once(
        a,
        `select pg_backend_pid() as pid, current_setting('bulkhead.pool_probe', true) as value`,
      );
      if (read.pid !== set.pid || read.value !== mark) throw new StartupError(SESSIONS_SHARED);
    }
  } catch (err) {
    if (err instanceof StartupError) throw err;
    // Only a pooler loses named statements between two statements of one connection.
    if ((err as { code?: unknown }).code === '26000') throw new StartupError(SESSIONS_SHARED);
    throw err;
  } finally {
    a.release();
    b.release();
  }
  if (!reads) return;
  try {
    await reads.unsafe('select 1', [], { prepare: false });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // PgBouncer: "unsupported startup parameter: default_transaction_read_only".
    if (/startup parameter/i.test(message))
      throw new StartupError(
        `DATABASE_URL leads to a connection pooler that refuses the read pool's startup parameter (${message}): ${POOLER_NEEDS}`,
      );
    throw err;
  }
}
