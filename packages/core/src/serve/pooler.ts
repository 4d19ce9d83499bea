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
