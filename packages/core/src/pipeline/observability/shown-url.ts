// A URL or DSN in a message or a log line shows where, never who: a password in it (a database's, an SMTP
// server's) may hold any character — `/`, `@`, `:` unencoded, which no URL parser then reads as a password —
// so a URL is cut down to what can be shown whatever it holds: scheme, host, port and database.

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
const IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;

/**
 * `scheme://host:port/database` of a URL or DSN, without user, password, query or fragment, even when
 * it is no valid URL (a password with an unencoded `/` or `@`); text that is no URL comes back as it is.
 */
export function shownUrl(value: string): string {
  const scheme = SCHEME.exec(value);
  if (!scheme) return value;
  let rest = value.slice(scheme[0].length).split(/[?#]/)[0]!;
  // The host follows the last `@` (a host holds none; a password may hold several, and `/` too).
  const at = rest.lastIndexOf('@');
  if (at >= 0) rest = rest.slice(at + 1);
  const [, hostPort = '', database = ''] = /^([^/?#]*)(?:\/([^/?#]*))?/.exec(rest) ?? [];
  return `${scheme[1]!.toLowerCase()}://${hostPort}${database ? `/${database}` : ''}`;
}

/** `text` with every URL in it shown as {@link shownUrl} shows it. */
export function withUrlsShown(text: string): string {
  return text.includes('://') ? text.replace(IN_TEXT, shownUrl) : text;
}
