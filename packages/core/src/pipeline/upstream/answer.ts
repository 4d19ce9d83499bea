import type { Dispatcher } from 'undici';
import { untrusted, type UntrustedText } from '../text-safety/untrusted/wrap.ts';

// An upstream's answer on its way to a handler: read up to the upstream's cap, and handed over with
// the upstream's credentials scrubbed out and its text marked untrusted.

/** An upstream's answer, read whole (up to the upstream's cap). */
export interface UpstreamResponse {
  status: number;
  ok: boolean;
  headers: Record<string, string>;
  bytes: number;
  /** The body as text, marked untrusted (its source names the upstream and the path): data, never instructions. */
  text(): UntrustedText;
  /** The body parsed as JSON; free text taken from it goes through `untrusted()` before it reaches a result. */
  json<T = unknown>(): T;
}

/** Text with any of `secrets` replaced: what the kit records and says never carries a credential. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s) out = out.split(s).join('[secret]');
  return out;
}

/** A body that failed while it was read, with how much had come. */
export class BodyFailed extends Error {
  constructor(
    readonly bytes: number,
    cause: unknown,
  ) {
    super('the body could not be read', { cause });
  }
}

/**
 * Reads a body up to `max` bytes: all of it, or (`over`) as far as the cap, where reading stops and
 * the connection is dropped, so that an answer far past the cap is never read whole. A body that
 * declares a length past the cap is not read at all.
 */
export async function readCapped(
  body: Dispatcher.ResponseData['body'],
  declared: number,
  max: number,
): Promise<{ buffer: Buffer; bytes: number; over: boolean }> {
  if (declared > max) {
    body.destroy();
    return { buffer: Buffer.alloc(0), bytes: 0, over: true };
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > max) {
        body.destroy();
        return { buffer: Buffer.alloc(0), bytes, over: true };
      }
      chunks.push(chunk);
    }
  } catch (err) {
    throw new BodyFailed(bytes, err);
  }
  return { buffer: Buffer.concat(chunks), bytes, over: false };
}

/**
 * The answer as a handler gets it: its text marked untrusted, naming `source`, and — text, JSON and
 * headers alike — with the upstream's own credentials replaced by `[secret]` before anything sees it
 * (an upstream that echoes the token it was sent must not hand it to a model or a log).
 */
export function upstreamResponse(
  res: Dispatcher.ResponseData,
  read: { buffer: Buffer; bytes: number },
  source: string,
  secrets: readonly string[],
): UpstreamResponse {
  const body = scrub(read.buffer.toString('utf8'), secrets);
  return {
    status: res.statusCode,
    ok: res.statusCode >= 200 && res.statusCode < 300,
    headers: Object.fromEntries(
      Object.entries(res.headers).map(([k, v]) => [
        k,
        scrub(Array.isArray(v) ? v.join(', ') : String(v ?? ''), secrets),
      ]),
    ),
    bytes: read.bytes,
    text: () => untrusted(body, { source }),
    // Parsed, then scrubbed again: a secret JSON-escaped in the text (`\/`, `\u…`) is plain once parsed.
    json: <T>() => scrubDeep(JSON.parse(body), secrets) as T,
  };
}

/** `value` with `secrets` replaced in every string of it, keys included. */
function scrubDeep(value: unknown, secrets: readonly string[]): unknown {
  if (!secrets.length) return value;
  if (typeof value === 'string') return scrub(value, secrets);
  if (Array.isArray(value)) return value.map((v) => scrubDeep(v, secrets));
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [scrub(k, secrets), scrubDeep(v, secrets)]),
    );
  return value;
}
