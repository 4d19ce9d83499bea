import type { UpstreamRequestOptions } from './client.ts';
import { UpstreamError } from './upstream-error.ts';

// Where a request goes: the path template filled (each parameter one path segment, never a step
// out of the path), under the upstream's base URL, with the query appended.

/** How many times a path parameter is percent-decoded to find a dot segment (`%252e` is `%2e` is `.`). */
const DECODE_ROUNDS = 3;

/**
 * Whether `value` is `.` or `..`, as written or percent-encoded (`%2e`, `%2E%2e`, `.%2e`, `%252e`, …):
 * a value the URL parser, or an upstream that decodes once more, resolves as a step in the path.
 */
export function isDotSegment(value: string): boolean {
  let v = value;
  for (let round = 0; ; round++) {
    if (v === '.' || v === '..') return true;
    if (round === DECODE_ROUNDS || !v.includes('%')) return false;
    try {
      const decoded = decodeURIComponent(v);
      if (decoded === v) return false;
      v = decoded;
    } catch {
      return false; // malformed escapes decode to no dot segment
    }
  }
}

/** The URL a path names under the upstream's base URL: a path is appended to the base path; an absolute URL is taken as given (and checked). */
export function target(base: URL, template: string, options: UpstreamRequestOptions): URL {
  const filled = template.replace(/\{([A-Za-z0-9_]+)\}/g, (_, key: string) => {
    const value = options.params?.[key];
    if (value === undefined) throw new Error(`upstream path ${template}: no value for {${key}}`);
    // A path parameter is one path segment: `..` would climb out of the path the tool names
    // (`/silence/{id}/x` with id `..` is `/x`), so it, `.` and their encoded forms are refused.
    if (isDotSegment(String(value)))
      throw new UpstreamError(
        `${key} ${JSON.stringify(String(value))} is not a valid value: in ${template} it would be read as a step in the path, not as {${key}} itself. Nothing was sent.`,
        'tool_error',
      );
    return encodeURIComponent(String(value));
  });
  const url = /^[a-z][a-z0-9+.-]*:/i.test(filled)
    ? new URL(filled)
    : new URL(`${base.pathname.replace(/\/+$/, '')}/${filled.replace(/^\/+/, '')}`, base);
  for (const [k, v] of Object.entries(options.query ?? {})) {
    if (v === undefined) continue;
    url.searchParams.delete(k);
    for (const item of Array.isArray(v) ? v : [v]) url.searchParams.append(k, String(item));
  }
  return url;
}
