import { createResultWaits, type ResultWaitLimits } from '../tasks/result-waits.ts';
import type { TokenVerifier } from './tokens.ts';

/** What {@link createListenStreams} needs. */
export interface ListenStreamOptions {
  /** Open streams per token and in this process (default 10 and 200, as `tasks/result` waits). */
  limits?: ResultWaitLimits;
  /** How often every open stream's token is checked again, for an expiry no notification announces (default 30 s). */
  recheckMs?: number;
}

/** The open 2026-07-28 `subscriptions/listen` streams of this process. */
export interface ListenStreams {
  /**
   * Takes a place for a stream of the token `bearer` (id `tokenId`): a signal that aborts when the token
   * is revoked or expires (and the release to call when the stream ends), or which cap is full.
   */
  open(
    tokenId: string,
    bearer: string,
  ): { ok: true; signal: AbortSignal; release: () => void } | { ok: false; full: 'token' | 'process' };
  readonly limits: Required<ResultWaitLimits>;
  close(): void;
}

/**
 * A listen stream lasts as long as its client keeps it: it holds a request, a server instance and a
 * place in every list-change broadcast. So, like `tasks/result` waits, streams are capped per token and
 * per process; and a stream lives only while its token does — the database's NOTIFY of a token change
 * (`bulkhead_tokens_notify`) has its streams' token checked again at once, and every stream's token is
 * checked every `recheckMs` for an expiry nothing announces. A token no longer valid ends its streams.
 */
export function createListenStreams(
  verifier: TokenVerifier,
  options: ListenStreamOptions = {},
): ListenStreams {
  const places = createResultWaits(options.limits);
  const open = new Map<AbortController, { tokenId: string; bearer: string }>();
  const recheck = async (tokenId?: string) => {
    for (const [ended, s] of [...open]) {
      if (tokenId !== undefined && s.tokenId !== tokenId) continue;
      const verdict = await verifier.verify(s.bearer).catch(() => undefined);
      // The database away says nothing about the token: the stream stays.
      if (verdict && !verdict.ok) ended.abort(new Error(`token ${s.tokenId} is ${verdict.reason}`));
    }
  };
  const unsubscribe = verifier.onChange((tokenId) => void recheck(tokenId));
  const timer = setInterval(() => void recheck(), options.recheckMs ?? 30_000);
  timer.unref();
  return {
    limits: places.limits,
    open(tokenId, bearer) {
      const place = places.enter(tokenId);
      if (!place.ok) return place;
      const ended = new AbortController();
      open.set(ended, { tokenId, bearer });
      return {
        ok: true,
        signal: ended.signal,
        release: () => {
          open.delete(ended);
          place.release();
        },
      };
    },
    close() {
      clearInterval(timer);
      unsubscribe();
      for (const ended of open.keys()) ended.abort(new Error('the server stops'));
      open.clear();
    },
  };
}
