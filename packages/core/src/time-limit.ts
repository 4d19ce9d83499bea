/** A tool call or an approved action ran past its time limit. */
export class TimeLimitExceeded extends Error {
  override readonly name = 'TimeLimitExceeded';
  constructor(readonly ms: number) {
    super(`time limit of ${ms} ms exceeded`);
  }
}

/**
 * Runs `work` with a signal that aborts after `ms` (or when `parent` aborts),
 * and rejects with {@link TimeLimitExceeded} at the deadline even if the work
 * ignores its signal. A late rejection of the abandoned work is swallowed, so
 * it never becomes an unhandled one.
 */
export async function withTimeLimit<T>(
  ms: number,
  work: (signal: AbortSignal) => Promise<T>,
  parent?: AbortSignal,
): Promise<T> {
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent?.reason);
  parent?.addEventListener('abort', onParentAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // Reject first: a handler that resolves as soon as it sees the abort must not win the race.
      reject(new TimeLimitExceeded(ms));
      controller.abort(new TimeLimitExceeded(ms));
    }, ms);
  });
  try {
    const running = work(controller.signal);
    running.catch(() => {});
    return await Promise.race([running, deadline]);
  } finally {
    clearTimeout(timer);
    parent?.removeEventListener('abort', onParentAbort);
  }
}
