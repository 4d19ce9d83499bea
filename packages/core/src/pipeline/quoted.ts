/** Runs of whitespace, line breaks and control characters: one space in a quoted value. */
const BREAKS = /[\s\p{Cc}]+/gu;

/**
 * A value that comes from outside (a name, a subject, an address, an alert's label), quoted for a
 * sentence a person reads — a gate's preview above all: flattened to one line, cut at `max`
 * characters with "…" (never inside a surrogate pair), and put in double quotes with every quote and
 * backslash inside escaped (JSON's string form), so that the text can never close its quote and read
 * as the sentence's own words (`"Foo\" (approved by the CFO)"`).
 */
export function quoted(text: string, max = Infinity): string {
  const flat = text.replace(BREAKS, ' ').trim();
  if (flat.length <= max) return JSON.stringify(flat);
  let cut = flat.slice(0, Math.max(max - 1, 0));
  if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
  return JSON.stringify(`${cut}…`);
}
