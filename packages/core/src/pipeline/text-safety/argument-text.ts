// The text-safety room: text that crosses a boundary. argument-text (what a model may send); visible, quoted
// and mixed-script (outside text as a person sees it); person-name (one person, one name); secret (fields
// kept out of logs); model-pattern (a model's regex, run by RE2); untrusted/ (outside text, delimited).
import { codePointLabel } from './visible.ts';

// Text a model sends is stored (Postgres text and jsonb refuse NUL and unpaired
// surrogates), shown to people and put into e-mails. No argument of any tool has a
// use for control characters other than tab, line feed and carriage return, so the
// kit refuses them for every tool, naming the field, before a handler runs; a
// field that must stay on one line says so in its schema (`lineArg`).

const C0_NAMES = [
  'NUL', 'SOH', 'STX', 'ETX', 'EOT', 'ENQ', 'ACK', 'BEL', 'BS', 'TAB', 'LF', 'VT', 'FF', 'CR', 'SO', 'SI',
  'DLE', 'DC1', 'DC2', 'DC3', 'DC4', 'NAK', 'SYN', 'ETB', 'CAN', 'EM', 'SUB', 'ESC', 'FS', 'GS', 'RS', 'US',
]; // prettier-ignore

/** Deeper than any tool's arguments go; a value nested further is not walked (the schema has refused it already). */
const MAX_DEPTH = 32;

/** A character no text argument may carry: its field, 1-based position and code point. */
export interface TextArgumentProblem {
  path: (string | number)[];
  position: number;
  codePoint: number;
  /** True for half of a surrogate pair without its other half: not Unicode text at all. */
  unpaired: boolean;
}

function refused(cp: number): boolean {
  return (cp < 0x20 && cp !== 0x09 && cp !== 0x0a && cp !== 0x0d) || (cp >= 0x7f && cp <= 0x9f);
}

/** The first refused character of `text`, or undefined. */
function firstRefused(text: string): Omit<TextArgumentProblem, 'path'> | undefined {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      return { position: i + 1, codePoint: unit, unpaired: true };
    }
    if (unit >= 0xdc00 && unit <= 0xdfff) return { position: i + 1, codePoint: unit, unpaired: true };
    if (refused(unit)) return { position: i + 1, codePoint: unit, unpaired: false };
  }
  return undefined;
}

/**
 * Every string (and key) of `args` holding a control character other than tab,
 * line feed and carriage return (C0, DEL, C1) or an unpaired surrogate: the
 * first such character per string.
 */
export function findTextArgumentProblems(args: unknown): TextArgumentProblem[] {
  const problems: TextArgumentProblem[] = [];
  const walk = (value: unknown, path: (string | number)[]) => {
    if (typeof value === 'string') {
      const found = firstRefused(value);
      if (found) problems.push({ path, ...found });
      return;
    }
    if (path.length >= MAX_DEPTH || value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      value.forEach((item, i) => walk(item, [...path, i]));
      return;
    }
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      const found = firstRefused(key);
      if (found) problems.push({ path: [...path, key], ...found });
      else walk(item, [...path, key]);
    }
  };
  walk(args, []);
  return problems;
}

function describe(p: TextArgumentProblem): string {
  const field = p.path.length ? p.path.map(String).join('.') : '(arguments)';
  const label = codePointLabel(p.codePoint);
  if (p.unpaired)
    return `${field}: character ${p.position} is ${label}, half of a surrogate pair without its other half (not valid Unicode text); remove it`;
  const name = p.codePoint < 0x20 ? C0_NAMES[p.codePoint] : p.codePoint === 0x7f ? 'DEL' : 'a C1 control';
  return `${field}: character ${p.position} is the control character ${label} (${name}), which no text argument may contain; remove it`;
}

/**
 * The invalid-argument sentence for text that no tool accepts, naming each
 * field and the character (never the value, which may be secret), or
 * undefined when every string is clean. Same shape as the schema's sentence.
 */
export function textArgumentError(args: unknown): string | undefined {
  const problems = findTextArgumentProblems(args);
  if (!problems.length) return undefined;
  return `Invalid arguments — ${problems.map(describe).join('; ')}. Nothing was done; call again with corrected arguments.`;
}
