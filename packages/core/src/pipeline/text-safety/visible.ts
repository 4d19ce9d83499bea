// Text from outside — customer text in an approval, a poisoned MCP server's tool texts, labels — reaches
// people in the terminal and in the console. What renders as nothing, reorders its neighbours or drives the
// terminal is shown, never applied: an escape sequence could recolour or hide text, U+202E reverses what
// follows it, a no-break space passes for a space, and a person would approve what they did not see.

const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Cs}]/u;
const SPACE = /\p{Zs}/u;

/** Letters and marks that draw nothing though they are not format characters. */
export function isBlankLetter(cp: number): boolean {
  return (
    (cp >= 0xfe00 && cp <= 0xfe0f) || // variation selectors
    (cp >= 0xe0100 && cp <= 0xe01ef) || // variation selectors supplement: used to smuggle bytes
    cp === 0x034f || // combining grapheme joiner
    cp === 0x115f ||
    cp === 0x1160 ||
    cp === 0x3164 ||
    cp === 0xffa0 || // Hangul fillers
    cp === 0x2800 || // braille blank
    cp === 0x17b4 ||
    cp === 0x17b5
  );
}

/**
 * True for a code point a reader cannot see for what it is: controls, format
 * characters (zero-width, bidirectional, tags), line and paragraph separators,
 * private-use, unassigned and lone surrogates, blank letters and every space
 * other than U+0020 (a no-break or ideographic space passes for a space).
 */
export function isHiddenCodePoint(cp: number): boolean {
  if (cp >= 0x21 && cp <= 0x7e) return false;
  if (cp === 0x20) return false;
  const ch = String.fromCodePoint(cp);
  return HIDDEN.test(ch) || SPACE.test(ch) || isBlankLetter(cp);
}

/** `U+202E`. */
export function codePointLabel(cp: number): string {
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}

const NAMES: Record<number, string> = {
  0x09: 'tab',
  0x0a: 'line feed',
  0x0d: 'carriage return',
  0x1b: 'escape: starts terminal control sequences',
  0xa0: 'no-break space: looks like a space',
  0xad: 'soft hyphen: invisible unless the line breaks there',
  0x061c: 'Arabic letter mark: changes text direction',
  0x180e: 'Mongolian vowel separator: invisible',
  0x200b: 'zero-width space: invisible',
  0x200c: 'zero-width non-joiner: invisible',
  0x200d: 'zero-width joiner: invisible',
  0x200e: 'left-to-right mark: changes text direction',
  0x200f: 'right-to-left mark: changes text direction',
  0x2028: 'line separator',
  0x2029: 'paragraph separator',
  0x202a: 'left-to-right embedding: changes text direction',
  0x202b: 'right-to-left embedding: changes text direction',
  0x202c: 'pop directional formatting: ends a direction change',
  0x202d: 'left-to-right override: forces the direction of what follows',
  0x202e: 'right-to-left override: reverses the text after it',
  0x202f: 'narrow no-break space: looks like a space',
  0x2060: 'word joiner: invisible',
  0x2066: 'left-to-right isolate: changes text direction',
  0x2067: 'right-to-left isolate: changes text direction',
  0x2068: 'first strong isolate: changes text direction',
  0x2069: 'pop directional isolate: ends a direction change',
  0x3000: 'ideographic space: looks like a space',
  0xfeff: 'zero-width no-break space (byte-order mark): invisible',
};

/** What a hidden code point is and does, in a few words: `right-to-left override: reverses the text after it`. */
export function hiddenCodePointName(cp: number): string {
  const named = NAMES[cp];
  if (named) return named;
  const ch = String.fromCodePoint(cp);
  if (cp >= 0xe0000 && cp <= 0xe007f) return 'tag character: invisible, can carry hidden text';
  if (isBlankLetter(cp)) return 'draws nothing: invisible';
  if (SPACE.test(ch)) return 'a space other than the ordinary one: looks like a space';
  if (/\p{Cc}/u.test(ch)) return 'control character';
  if (/\p{Cf}/u.test(ch)) return 'format character: invisible';
  if (/\p{Co}/u.test(ch)) return 'private-use character: no agreed look';
  if (/\p{Cs}/u.test(ch)) return 'lone surrogate: not a character';
  return 'unassigned code point: no agreed look';
}

/** One run of a text as it is shown: plain text, or one hidden code point. */
export type VisiblePart = { text: string } | { hidden: number };

/** What {@link visibleParts} keeps as it is. */
export interface VisibleOptions {
  /** Keep line breaks (LF, CRLF) as they are, for text whose lines are meant, like an e-mail body; default false. */
  lineBreaks?: boolean;
}

/** `text` cut into plain runs and hidden code points (each its own part), in order. */
export function visibleParts(text: string, options: VisibleOptions = {}): VisiblePart[] {
  const parts: VisiblePart[] = [];
  let run = '';
  let previous = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const crlf = cp === 0x0d && text.codePointAt(previous + 1) === 0x0a;
    previous += ch.length;
    if (options.lineBreaks && (cp === 0x0a || crlf)) run += ch;
    else if (isHiddenCodePoint(cp)) {
      if (run) parts.push({ text: run });
      run = '';
      parts.push({ hidden: cp });
    } else run += ch;
  }
  if (run) parts.push({ text: run });
  return parts;
}

/** `text` with every hidden code point written as `[U+202E]` (see {@link isHiddenCodePoint}). */
export function visible(text: string, options: VisibleOptions = {}): string {
  return visibleParts(text, options)
    .map((p) => ('text' in p ? p.text : `[${codePointLabel(p.hidden)}]`))
    .join('');
}

/** {@link visible} for a text whose line breaks are layout (pretty-printed JSON). */
export function visibleLines(text: string): string {
  return visible(text, { lineBreaks: true });
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
