// Text from outside — a poisoned MCP server's tool texts, customer text in an approval preview — reaches
// the terminal. Control and invisible characters in it are shown, never sent: an escape sequence could
// recolour, rewrite or hide what a person reads before deciding.
const UNSAFE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;

/** `text` with every control, format and line-separator character shown as `[U+001B]`. */
export function visible(text: string): string {
  return text.replace(UNSAFE, (c) => `[U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}]`);
}

/** {@link visible} for each line of a text whose line breaks are layout (pretty-printed JSON). */
export function visibleLines(text: string): string {
  return text.split('\n').map(visible).join('\n');
}

/**
 * JSON output with what `JSON.stringify` leaves raw — C1 controls, format
 * characters, U+2028/U+2029 — written as `\uXXXX` escapes: the same value for
 * a parser, nothing hidden for a terminal.
 */
export function escapeJson(json: string): string {
  return json.replace(/[\u007f-\u009f\p{Cf}\u2028\u2029]/gu, (c) =>
    Array.from({ length: c.length }, (_, i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`).join(
      '',
    ),
  );
}
