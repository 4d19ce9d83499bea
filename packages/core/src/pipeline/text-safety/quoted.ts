/**
 * A value that comes from outside (a name, a subject, an address, an alert's label), quoted for a
 * sentence a person reads — a gate's preview above all: in double quotes, in JSON's string form, so
 * that a quote or backslash inside is escaped and the text can never close its quote and read as the
 * sentence's own words (`"Foo\" (approved by the CFO)"`), and a line break or other control character
 * shows as its escape (`\n`, `\u001b`) instead of breaking the line (so do U+2028 and U+2029, which
 * JSON leaves alone). Longer than `max` characters, it is cut with "…" (never inside a surrogate pair).
 */
export function quoted(text: string, max = Infinity): string {
  let shown = text;
  if (shown.length > max) {
    shown = shown.slice(0, Math.max(max - 1, 0));
    if (/[\ud800-\udbff]$/.test(shown)) shown = shown.slice(0, -1);
    shown = `${shown}…`;
  }
  return JSON.stringify(shown).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}
