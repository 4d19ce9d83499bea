/** The default time limit of a tool call (a tool sets its own with `timeoutMs`). */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** A tool call or an approved action ran past its time limit. */
export class TimeLimitExceeded extends Error {
  override readonly name = 'TimeLimitExceeded';
  constructor(readonly ms: number) {
    super(`time limit of ${ms} ms exceeded`);
  }
}

/** The caller withdrew the call (`notifications/cancelled`, a closed connection, a server shutting down). */
export class Cancelled extends Error {
  override readonly name = 'Cancelled';
  constructor(readonly reason?: unknown) {
    super('the call was cancelled');
  }
}

/**
 * Runs `work` with a signal that aborts after `ms` or when `parent` aborts, and
 * rejects with {@link TimeLimitExceeded} at the deadline (or {@link Cancelled}
 * when the parent aborts) even if the work ignores its signal. A late rejection
 * of the abandoned work is swallowed, so it never becomes an unhandled one.
 */
export async function withTimeLimit<T>(
  ms: number,
  work: (signal: AbortSignal) => Promise<T>,
  parent?: AbortSignal,
): Promise<T> {
  if (parent?.aborted) throw new Cancelled(parent.reason);
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onParentAbort: (() => void) | undefined;
  const stopped = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // Reject first: a handler that resolves as soon as it sees the abort must not win the race.
      reject(new TimeLimitExceeded(ms));
      controller.abort(new TimeLimitExceeded(ms));
    }, ms);
    onParentAbort = () => {
      reject(new Cancelled(parent?.reason));
      controller.abort(new Cancelled(parent?.reason));
    };
    parent?.addEventListener('abort', onParentAbort, { once: true });
  });
  try {
    const running = work(controller.signal);
    running.catch(() => {});
    return await Promise.race([running, stopped]);
  } finally {
    clearTimeout(timer);
    if (onParentAbort) parent?.removeEventListener('abort', onParentAbort);
  }
}

/**
 * A call got no database connection (or no answer to the statement that set it up) within its time
 * limit: the database is away, or every connection is taken. A connection error (`CONNECT_TIMEOUT`),
 * so that the call answers that the database could not be reached and to try again.
 */
export class NoConnectionInTime extends Error {
  override readonly name = 'NoConnectionInTime';
  readonly code = 'CONNECT_TIMEOUT';
  constructor(readonly ms: number) {
    super(`no database connection within the call's time limit of ${ms} ms`);
  }
}

/**
 * `work` raced against the time left until `deadline` (a `performance.now()` time; none if not finite) and against
 * `signal`: rejects with {@link NoConnectionInTime} at the deadline, or {@link Cancelled} on abort.
 * What `work` does later is left to it (its rejection is handled).
 */
export async function waitAtMost<T>(
  work: Promise<T>,
  deadline: number,
  limitMs: number,
  signal?: AbortSignal,
): Promise<T> {
  work.catch(() => {});
  if (signal?.aborted) throw new Cancelled(signal.reason);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        // No finite deadline (a time limit that is no number): no timer, which would fire at once.
        if (Number.isFinite(deadline))
          timer = setTimeout(
            () => reject(new NoConnectionInTime(limitMs)),
            Math.max(0, deadline - performance.now()),
          );
        onAbort = () => reject(new Cancelled(signal?.reason));
        signal?.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
