import type { MiddlewareHandler } from 'hono';
import { ARGUMENT_LIMITS, argumentsOverLimit } from '../../../pipeline/call/argument-limits.ts';
import { TASK_METHODS } from '../../../tasks/task-handlers.ts';
import { bodyAborted } from '../aborted.ts';
import { Refusal, rpcError } from '../refusal.ts';
import type { McpEnv, RpcMessage } from '../state.ts';

/** Methods a server answers without an audit event of their own (docs/tests.md lists them). */
export const HOUSEKEEPING = new Set([
  'initialize',
  'ping',
  'tools/list',
  'server/discover',
  // A stream of list-changed notifications: no data of the server's, like tools/list.
  'subscriptions/listen',
]);

/** Methods served beyond housekeeping; each audits itself (the task methods in `tasks/task-handlers.ts`). */
export const SERVED = new Set<string>(['tools/call', ...TASK_METHODS]);

/** The most messages a 2025-03-26 batch may carry. */
export const MAX_BATCH = 20;

/**
 * The body, at most `max` bytes. A declared length is checked before anything is read, and the body
 * is then read whole (on Node, straight from the socket: HTTP framing holds it to that length); a body
 * without one is counted while it streams in.
 */
async function readLimited(req: Request, max: number): Promise<Uint8Array | 'too_large'> {
  const declared = req.headers.get('content-length');
  if (declared !== null && /^\d+$/.test(declared)) {
    if (Number(declared) > max) return 'too_large';
    return new Uint8Array(await req.arrayBuffer());
  }
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      return 'too_large';
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

function classify(message: unknown): RpcMessage {
  if (!message || typeof message !== 'object' || Array.isArray(message))
    return { method: null, tool: undefined, wellFormedCall: false };
  const m = message as { method?: unknown; params?: unknown };
  const method = typeof m.method === 'string' ? m.method : null;
  if (method !== 'tools/call') return { method, tool: undefined, wellFormedCall: false };
  const params = m.params;
  if (!params || typeof params !== 'object' || Array.isArray(params))
    return { method, tool: undefined, wellFormedCall: false };
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  const argsOk = args === undefined || (args !== null && typeof args === 'object' && !Array.isArray(args));
  return { method, tool: name, wellFormedCall: typeof name === 'string' && argsOk };
}

/** Why a message is not served, for its audit event; null when it is served or is housekeeping. */
export function unserved(m: RpcMessage): string | null {
  if (m.method === null) return 'not_a_request';
  if (m.method.startsWith('notifications/') || HOUSEKEEPING.has(m.method)) return null;
  if (m.method === 'tools/call') return m.wellFormedCall ? null : 'params';
  return SERVED.has(m.method) ? null : 'unsupported_method';
}

/**
 * The most keys a `tools/call`'s arguments object may hold at its top level to be passed on. The MCP
 * layer copies that level key by key before any tool sees it (60,000 keys cost a third of a second
 * and 100 MB); below this, the call pipeline refuses too many keys itself, naming them.
 */
export const MAX_ARGUMENT_KEYS = 10 * ARGUMENT_LIMITS.values;

/** Whether `args` is an object with more than `max` keys of its own, counted without copying them. */
function moreKeysThan(args: unknown, max: number): boolean {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return false;
  let n = 0;
  for (const _key in args) if (++n > max) return true;
  return false;
}

/**
 * Refuses a request whose params pass the structural limits before the MCP layer walks them: a
 * cheap walk that stops at the first bound, answered -32602 with the limits. A `tools/call`'s
 * arguments are left to the call pipeline, which walks them the same way and answers an `isError`
 * result that names the argument, as it does for every other argument it refuses; only a key
 * count past {@link MAX_ARGUMENT_KEYS} is refused here.
 */
function oversizedParams(messages: unknown[]): void {
  for (const m of messages) {
    const message = m as { method?: unknown; id?: unknown; params?: unknown } | null;
    if (!message || typeof message.params !== 'object' || message.params === null) continue;
    const id =
      messages.length === 1 && (typeof message.id === 'string' || typeof message.id === 'number')
        ? message.id
        : null;
    let params = message.params as Record<string, unknown>;
    if (message.method === 'tools/call') {
      const { arguments: args, ...rest } = params;
      if (moreKeysThan(args, MAX_ARGUMENT_KEYS))
        throw new Refusal(
          400,
          'invalid_arguments',
          rpcError(
            -32602,
            `Invalid params: the arguments hold more than ${MAX_ARGUMENT_KEYS} keys; a tool's arguments hold at most ${ARGUMENT_LIMITS.values} values. Nothing was done; call again with the arguments the tool's input schema describes.`,
            id,
          ),
          { summary: { reason: 'arguments_too_large', problem: `more than ${MAX_ARGUMENT_KEYS} keys` } },
        );
      params = rest;
    }
    const over = argumentsOverLimit(params);
    if (!over) continue;
    const { values, depth, chars } = ARGUMENT_LIMITS;
    const where = over.field === null ? 'the params hold' : `params.${over.field.slice(0, 100)} holds`;
    throw new Refusal(
      400,
      'bad_request',
      rpcError(
        -32602,
        `Invalid params: ${where} ${over.problem}. A request's params hold at most ${values} values, ${depth} levels deep and ${chars} characters of text; nothing was done.`,
        id,
      ),
      { summary: { reason: 'params_too_large', field: over.field, problem: over.problem } },
    );
  }
}

/**
 * Reads a POST body within the size limit (the `Content-Length` is checked
 * before the token, the actual bytes here), parses it, and classifies its
 * message: the method and, for `tools/call`, the tool and whether the params
 * have a shape the call pipeline takes. A body that is not JSON, not an
 * object, or a batch where the protocol has none is refused here. A batch is
 * accepted only from 2025-03-26 clients (that revision requires servers to
 * take them; later ones removed batching).
 */
export function jsonBody(maxBytes: number): MiddlewareHandler<McpEnv> {
  const tooLarge = () =>
    new Refusal(
      413,
      'payload_too_large',
      { error: 'payload_too_large', error_description: `Request bodies are limited to ${maxBytes} bytes.` },
      { summary: { reason: 'body' } },
    );
  return async (c, next) => {
    if (c.req.method !== 'POST') return next();
    let bytes: Uint8Array | 'too_large';
    try {
      bytes = await readLimited(c.req.raw, maxBytes);
    } catch (err) {
      if (!bodyAborted(err, c.req.raw)) throw err;
      // Nobody reads this answer; it is for the audit event, which says the client left, not that the server failed.
      throw new Refusal(
        400,
        'bad_request',
        rpcError(
          -32600,
          'The request body ended early: the client closed the connection before sending it all.',
        ),
        { summary: { reason: 'body_aborted' } },
      );
    }
    if (bytes === 'too_large') throw tooLarge();
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      throw new Refusal(400, 'bad_request', rpcError(-32700, 'Parse error: the body is not JSON.'), {
        summary: { reason: 'parse' },
      });
    }
    const version = c.req.header('mcp-protocol-version');
    if (Array.isArray(body)) {
      if (version !== undefined && version !== '2025-03-26')
        throw new Refusal(
          400,
          'bad_request',
          rpcError(
            -32600,
            `Batches are not part of protocol revision ${version}: send one JSON-RPC message per request.`,
          ),
          { summary: { reason: 'batch' } },
        );
      if (body.length === 0 || body.length > MAX_BATCH)
        throw new Refusal(
          400,
          'bad_request',
          rpcError(-32600, `A batch carries 1 to ${MAX_BATCH} JSON-RPC messages.`),
          { summary: { reason: 'batch', size: body.length } },
        );
    } else if (!body || typeof body !== 'object') {
      throw new Refusal(
        400,
        'bad_request',
        rpcError(
          -32600,
          'Invalid Request: the body must be a JSON-RPC message (an object with jsonrpc, method, id).',
        ),
        { summary: { reason: 'not_object', type: body === null ? 'null' : typeof body } },
      );
    }
    const list: unknown[] = Array.isArray(body) ? body : [body];
    c.set('body', body);
    c.set('messages', list.map(classify));
    oversizedParams(list);
    await next();
  };
}
