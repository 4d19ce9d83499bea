/** Calls in flight on this process, by token and JSON-RPC id, that a later `notifications/cancelled` may stop. */
export interface Cancellations {
  /** Registers a call; its signal aborts when the same token cancels that id, or when `parent` aborts. */
  track(
    tokenId: string,
    rpcId: string | number,
    parent?: AbortSignal,
  ): { signal: AbortSignal; done: () => void };
  /** Stops the calls that the `notifications/cancelled` messages in `body` name, for this token only. */
  cancel(tokenId: string, body: unknown): void;
  /** Resolves when no call is in flight (their events handed to the audit writer), or after `maxMs`. */
  idle(maxMs: number): Promise<void>;
}

const key = (tokenId: string, rpcId: unknown) => `${tokenId}\u0000${JSON.stringify(rpcId)}`;

/**
 * A 2025-11-25 client withdraws a call by sending `notifications/cancelled` in a request of its own;
 * without sessions it arrives apart from the call it names. A token can only cancel its own calls,
 * so the notice is matched by token and request id. (A 2026-07-28 client closes the call's stream
 * instead, which reaches the call's own signal directly.) A notice that lands on another replica
 * than the call finds nothing here; the call then ends at its time limit.
 */
export function createCancellations(): Cancellations {
  const calls = new Map<string, Set<AbortController>>();
  const waiting: (() => void)[] = [];
  return {
    track(tokenId, rpcId, parent) {
      const k = key(tokenId, rpcId);
      const controller = new AbortController();
      // One signal for both ways a call is withdrawn (cheaper than AbortSignal.any on every call).
      const forward = () => controller.abort(parent!.reason);
      if (parent?.aborted) forward();
      else parent?.addEventListener('abort', forward, { once: true });
      const set = calls.get(k) ?? new Set();
      set.add(controller);
      calls.set(k, set);
      return {
        signal: controller.signal,
        done: () => {
          parent?.removeEventListener('abort', forward);
          set.delete(controller);
          if (set.size === 0 && calls.get(k) === set) calls.delete(k);
          if (calls.size === 0) for (const wake of waiting.splice(0)) wake();
        },
      };
    },
    cancel(tokenId, body) {
      for (const m of Array.isArray(body) ? body : [body]) {
        const message = m as { method?: unknown; params?: { requestId?: unknown; reason?: unknown } } | null;
        if (message?.method !== 'notifications/cancelled') continue;
        const rpcId = message.params?.requestId;
        if (typeof rpcId !== 'string' && typeof rpcId !== 'number') continue;
        const reason =
          typeof message.params?.reason === 'string' ? message.params.reason.slice(0, 200) : 'cancelled';
        for (const controller of calls.get(key(tokenId, rpcId)) ?? []) controller.abort(new Error(reason));
      }
    },
    async idle(maxMs) {
      if (calls.size === 0) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => waiting.push(resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, maxMs))),
      ]);
      clearTimeout(timer);
    },
  };
}
