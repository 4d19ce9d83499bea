/** How many `tasks/result` answers may be held open at once, per token and in this process. */
export interface ResultWaitLimits {
  /** Open waits one token may hold (default 10). */
  perToken?: number;
  /** Open waits this process holds across all tokens (default 200). */
  total?: number;
}

/** The open `tasks/result` waits of this process. */
export interface ResultWaits {
  /** Takes a place for a wait of `tokenId`: its release, or which cap is full. */
  enter(tokenId: string): { ok: true; release: () => void } | { ok: false; full: 'token' | 'process' };
  readonly limits: Required<ResultWaitLimits>;
}

/** The defaults of {@link ResultWaitLimits}. */
export const RESULT_WAIT_LIMITS: Required<ResultWaitLimits> = { perToken: 10, total: 200 };

/**
 * A 2025-11-25 `tasks/result` holds its request open until the task is final, which for an
 * approval can be hours: each wait keeps a request, a server instance and a database poll every
 * two seconds. Without a cap a few tokens can hold thousands (and a 2025-03-26 batch twenty at a
 * time). Past a cap the request is answered at once with an error that says to poll `tasks/get`.
 */
export function createResultWaits(limits: ResultWaitLimits = {}): ResultWaits {
  const resolved = { ...RESULT_WAIT_LIMITS, ...limits };
  const byToken = new Map<string, number>();
  let total = 0;
  return {
    limits: resolved,
    enter(tokenId) {
      const held = byToken.get(tokenId) ?? 0;
      if (held >= resolved.perToken) return { ok: false, full: 'token' };
      if (total >= resolved.total) return { ok: false, full: 'process' };
      byToken.set(tokenId, held + 1);
      total++;
      let released = false;
      return {
        ok: true,
        release: () => {
          if (released) return;
          released = true;
          total--;
          const left = (byToken.get(tokenId) ?? 1) - 1;
          if (left > 0) byToken.set(tokenId, left);
          else byToken.delete(tokenId);
        },
      };
    },
  };
}
