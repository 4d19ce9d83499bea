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
