import { UsageError } from './io.ts';

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 };

/**
 * `30d`, `12h`, `2w` → that long from `now`; `2027-01-31` → that day's end
 * (UTC); `never` → null. Anything else is a usage error naming the forms.
 */
export function parseExpiry(text: string, flag: string, now = new Date()): Date | null {
  if (text === 'never') return null;
  const rel = /^(\d{1,5})([mhdw])$/.exec(text);
  if (rel) {
    const ms = Number(rel[1]) * UNITS[rel[2]!]!;
    if (ms <= 0) throw new UsageError(`${flag}: "${text}" is not in the future`);
    return new Date(now.getTime() + ms);
  }
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    const date = new Date(`${text}T23:59:59.999Z`);
    if (Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== text)
      throw new UsageError(`${flag}: "${text}" is not a real date`);
    if (date <= now) throw new UsageError(`${flag}: ${text} is in the past`);
    return date;
  }
  throw new UsageError(`${flag}: "${text}" is not a duration (30d, 12h, 2w), a date (2027-01-31) or "never"`);
}

/** `2026-11-29`, `2026-11-29T10:00Z`, or a duration back from now (`7d`, `12h`). */
export function parseInstant(text: string, flag: string, now = new Date()): Date {
  const rel = /^(\d{1,5})([mhdw])$/.exec(text);
  if (rel) return new Date(now.getTime() - Number(rel[1]) * UNITS[rel[2]!]!);
  const date = new Date(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
  if (Number.isNaN(date.getTime()))
    throw new UsageError(
      `${flag}: "${text}" is not a date (2026-11-29, 2026-11-29T10:00Z) or a duration (7d, 12h)`,
    );
  return date;
}
