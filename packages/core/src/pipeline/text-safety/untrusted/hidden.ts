import { codePointLabel, isBlankLetter } from '../visible.ts';

/**
 * `strict`: everything that renders as nothing or reorders its neighbours —
 * for tool definitions, where none of it belongs. `text`: the same minus what
 * ordinary writing uses (direction marks in right-to-left text, soft hyphens,
 * one emoji variation selector U+FE0E/U+FE0F right after an emoji or inside a
 * keycap, joiners inside emoji and non-Latin words, emoji flag tag sequences,
 * a leading byte-order mark) — for database text. Every other variation
 * selector (U+FE00–U+FE0F, U+E0100–U+E01EF) is hidden in both modes.
 */
export type HiddenMode = 'strict' | 'text';

/** One hidden character: its UTF-16 offset and code point. */
export interface HiddenCharacter {
  index: number;
  codePoint: number;
}

const FORMAT = /[\p{Cf}\p{Cc}]/u;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const WORDLIKE = /[\p{L}\p{M}\p{Extended_Pictographic}]/u;

const EMOJI = /\p{Emoji}/u;
const KEYCAP_BASE = /^[0-9#*]$/;

/**
 * U+FE0E/U+FE0F choose text or emoji style for the one emoji right before
 * them (`❤️`, `☺︎`), or stand between `0`–`9`, `#`, `*` and U+20E3 in a
 * keycap (`1️⃣`). Anywhere else — after a letter, or a second one in a row —
 * a selector changes nothing visible and can carry smuggled bytes.
 */
function emojiSelector(cps: readonly number[], i: number): boolean {
  const before = cps[i - 1];
  if (before === undefined) return false;
  const base = String.fromCodePoint(before);
  if (KEYCAP_BASE.test(base)) return cps[i + 1] === 0x20e3;
  return EMOJI.test(base);
}

function toleratedInText(cps: readonly number[], i: number): boolean {
  const cp = cps[i]!;
  if (cp === 0x09 || cp === 0x0a || cp === 0x0d) return true;
  if (cp === 0x200e || cp === 0x200f || cp === 0x061c || cp === 0x00ad) return true;
  if (cp === 0xfe0e || cp === 0xfe0f) return emojiSelector(cps, i);
  if (cp === 0xfeff && i === 0) return true;
  if (cp === 0x200c || cp === 0x200d) {
    const before = cps[i - 1];
    const after = cps[i + 1];
    const wordlike = (c: number | undefined) =>
      c !== undefined && c > 0x7f && WORDLIKE.test(String.fromCodePoint(c));
    return wordlike(before) && wordlike(after);
  }
  if (cp >= 0xe0020 && cp <= 0xe007f) {
    // An emoji flag: U+1F3F4, tag letters, U+E007F cancel tag.
    let start = i;
    while (start > 0 && cps[start - 1]! >= 0xe0020 && cps[start - 1]! <= 0xe007e) start--;
    let end = i;
    while (end < cps.length && cps[end]! >= 0xe0020 && cps[end]! <= 0xe007e) end++;
    return cps[start - 1] === 0x1f3f4 && cps[end] === 0xe007f && end - start <= 6;
  }
  return false;
}

/** Hidden characters in `text`: zero-width, bidirectional controls, Unicode tags, other invisible code points. */
export function findHiddenCharacters(text: string, mode: HiddenMode): HiddenCharacter[] {
  // Printable ASCII hides nothing: most database text is answered without a look at each character.
  if (PRINTABLE_ASCII.test(text)) return [];
  const cps: number[] = [];
  const offsets: number[] = [];
  let offset = 0;
  for (const ch of text) {
    cps.push(ch.codePointAt(0)!);
    offsets.push(offset);
    offset += ch.length;
  }
  const found: HiddenCharacter[] = [];
  for (let i = 0; i < cps.length; i++) {
    const cp = cps[i]!;
    const hidden = FORMAT.test(String.fromCodePoint(cp)) || isBlankLetter(cp);
    if (!hidden) continue;
    if (mode === 'strict' ? cp === 0x0a || cp === 0x09 || cp === 0x0d : toleratedInText(cps, i)) continue;
    found.push({ index: offsets[i]!, codePoint: cp });
  }
  return found;
}

/** Replaces each hidden character (text mode) with a visible `[U+200B]`. */
export function showHidden(text: string): string {
  const found = findHiddenCharacters(text, 'text');
  if (!found.length) return text;
  let out = '';
  let last = 0;
  for (const h of found) {
    out += text.slice(last, h.index) + `[${codePointLabel(h.codePoint)}]`;
    last = h.index + (h.codePoint > 0xffff ? 2 : 1);
  }
  return out + text.slice(last);
}

/** Removes every hidden character (strict) and folds compatibility forms (NFKC), so that `ig\u200Bnore` reads `ignore`. */
export function stripHidden(text: string): string {
  const hidden = findHiddenCharacters(text, 'strict');
  let plain = text;
  for (let i = hidden.length - 1; i >= 0; i--) {
    const h = hidden[i]!;
    plain = plain.slice(0, h.index) + plain.slice(h.index + (h.codePoint > 0xffff ? 2 : 1));
  }
  return plain.normalize('NFKC');
}
