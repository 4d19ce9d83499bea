/**
 * True when reading a request's body failed because the client closed the connection before
 * sending all of it (Node reports `ECONNRESET` "aborted", and the request's signal aborts). That is
 * the client's doing, not the server's: a 400-class refusal with no stack trace, never a 500.
 */
export function bodyAborted(err: unknown, request?: Request): boolean {
  if (request?.signal.aborted) return true;
  const e = err as { code?: unknown; message?: unknown } | null | undefined;
  return e?.code === 'ECONNRESET' || e?.code === 'ECONNABORTED' || e?.message === 'aborted';
}
