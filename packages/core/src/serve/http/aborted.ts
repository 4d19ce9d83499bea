/**
 * True when reading `request`'s body failed because the client closed the connection before
 * sending all of it: the request's signal has aborted and the error is Node's `ECONNRESET`
 * "aborted". Both, so that a database connection reset while the client is still there stays an
 * internal error. That is the client's doing, not the server's: a 400-class refusal with no stack
 * trace, never a 500.
 */
export function bodyAborted(err: unknown, request: Request): boolean {
  if (!request.signal.aborted) return false;
  const e = err as { code?: unknown; message?: unknown } | null | undefined;
  return e?.code === 'ECONNRESET' || e?.code === 'ECONNABORTED' || e?.message === 'aborted';
}
