/** How a handler reports how far it is (`ctx.progress`): `done` of `total` units, and a short message. */
export type ProgressReporter = (done: number, total?: number, message?: string) => void;

/** One `notifications/progress`, without its token. */
export interface ProgressUpdate {
  progress: number;
  total?: number;
  message?: string;
}

/** A call's progress: what the handler reports, and the end of the call. */
export interface ProgressChannel {
  report: ProgressReporter;
  /**
   * Ends the channel: sends what is still held back and, when the call completed, a final
   * notification at `total` (or at the last value reported) unless that was the last one sent.
   * Resolves once everything is sent, so the notifications precede the result on the stream.
   */
  finish(completed: boolean): Promise<void>;
}

/** The least time between two notifications of one call: at most four a second. */
export const PROGRESS_INTERVAL_MS = 250;

/** The longest message passed on (a progress message is a status line, not a report). */
export const MAX_PROGRESS_MESSAGE = 200;

const noop: ProgressReporter = () => {};

/** The channel of a call whose client sent no progress token: reports go nowhere. */
export const NO_PROGRESS: ProgressChannel = { report: noop, finish: async () => {} };

/**
 * Turns a handler's reports into progress notifications a client can take: in
 * order, strictly increasing (the protocol requires it; a report that does not
 * go forward is dropped), and at most one per `intervalMs` — a chatty handler
 * reporting every row has its reports held back, the newest replacing the
 * older, and sent when the interval is over. Reports are never awaited by the
 * handler and a failed send (the client went away) is dropped: progress is a
 * courtesy, never a reason for a call to fail.
 */
export function createProgressChannel(
  send: (update: ProgressUpdate) => Promise<void>,
  options: { intervalMs?: number; now?: () => number } = {},
): ProgressChannel {
  const interval = options.intervalMs ?? PROGRESS_INTERVAL_MS;
  const now = options.now ?? (() => performance.now());
  let lastSentAt = -Infinity;
  let lastSent: ProgressUpdate | undefined;
  let pending: ProgressUpdate | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let chain = Promise.resolve();

  const dispatch = (update: ProgressUpdate) => {
    lastSentAt = now();
    lastSent = update;
    chain = chain.then(() => send(update)).catch(() => {});
  };
  const flush = () => {
    timer = undefined;
    if (!pending) return;
    const update = pending;
    pending = undefined;
    dispatch(update);
  };
  const latest = () => pending?.progress ?? lastSent?.progress ?? -Infinity;

  return {
    report(done, total, message) {
      if (closed || typeof done !== 'number' || !Number.isFinite(done) || done < 0) return;
      if (done <= latest()) return;
      const update: ProgressUpdate = { progress: done };
      if (typeof total === 'number' && Number.isFinite(total) && total >= done) update.total = total;
      if (typeof message === 'string' && message.trim())
        update.message = message.trim().slice(0, MAX_PROGRESS_MESSAGE);
      pending = update;
      const wait = lastSentAt + interval - now();
      if (wait <= 0) {
        clearTimeout(timer);
        flush();
      } else if (!timer) {
        timer = setTimeout(flush, wait);
        timer.unref();
      }
    },
    async finish(completed) {
      if (closed) return chain;
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      const last = pending ?? lastSent;
      pending = undefined;
      if (last) {
        const final = completed && last.total !== undefined ? { ...last, progress: last.total } : last;
        if (final.progress > (lastSent?.progress ?? -Infinity)) {
          // The final notification says the work is done: a message of an earlier step would not.
          if (final !== last && final.progress !== last.progress) delete final.message;
          dispatch(final);
        }
      }
      await chain;
    },
  };
}
