import { findHiddenCharacters, stripHidden } from './hidden.ts';
import { INJECTION_REASONS, PATTERNS, type InjectionReason } from './patterns.ts';
import { isUntrusted } from './wrap.ts';

/** One instruction-like passage: the reason, the text that matched and where (in the text with hidden characters removed). */
export interface InstructionMatch {
  reason: Exclude<InjectionReason, 'hidden_characters'>;
  match: string;
  index: number;
  /** Length of the matched passage in the stripped text. */
  length: number;
}

/** Passages of `text` that read like orders to an assistant, in pattern order. Hidden characters are ignored while matching. */
export function findInstructions(text: string): InstructionMatch[] {
  const plain = stripHidden(text);
  const out: InstructionMatch[] = [];
  for (const { reason, pattern } of PATTERNS) {
    for (const m of plain.matchAll(pattern)) {
      out.push({
        reason: reason as InstructionMatch['reason'],
        match: m[0].trim().replace(/\s+/g, ' '),
        index: m.index,
        length: m[0].length,
      });
    }
  }
  return out;
}

/**
 * Why `text` looks like an injection attempt rather than data (empty when it
 * does not). A heuristic: it flags text addressed to an assistant, asking to
 * ignore or override instructions, to call tools or reveal secrets, role-play
 * markers, and hidden characters; English and German. A flag marks the result
 * and the audit event; the text is still returned.
 */
export function detectInjection(text: string): InjectionReason[] {
  const reasons = new Set<InjectionReason>();
  if (findHiddenCharacters(text, 'text').length) reasons.add('hidden_characters');
  for (const m of findInstructions(text)) reasons.add(m.reason);
  return INJECTION_REASONS.filter((r) => reasons.has(r));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * Walks a handler's result and runs the detector on every untrusted value.
 * A flagged value gets `injection_suspected` (its reasons); the returned
 * value is a copy, the handler's own objects are left alone. `suspected`
 * lists `<source>: <reason>` for the whole result, without repeats.
 */
export function scanUntrusted(value: unknown): { value: unknown; suspected: string[] } {
  const suspected = new Set<string>();
  const walk = (v: unknown): unknown => {
    if (isUntrusted(v)) {
      const { injection_suspected: _previous, ...rest } = v;
      const reasons = detectInjection(v.text);
      for (const r of reasons) suspected.add(`${v.source}: ${r}`);
      return reasons.length ? { ...rest, injection_suspected: reasons } : rest;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (isPlainObject(v)) {
      const out: Record<string, unknown> = {};
      for (const [k, item] of Object.entries(v)) out[k] = walk(item);
      return out;
    }
    return v;
  };
  const scanned = walk(value);
  return { value: scanned, suspected: [...suspected] };
}
