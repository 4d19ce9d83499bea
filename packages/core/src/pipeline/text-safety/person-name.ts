// A person is named by people, in a token's owner, an approver's person, a console sign-in: one person
// must have one name wherever separation of duties compares them, or `B\u200bob` (a zero-width space),
// `Bob\u00a0` or a Cyrillic `Bоb` asks and Bob approves. The database's `bulkhead_person_key`
// (migration 0049) computes the same key from the same table, person-name-map.json.
import MAP from './person-name-map.json' with { type: 'json' };
import { mixedScriptWords } from './mixed-script.ts';

const map = MAP as Record<string, string>;

/**
 * The key two names of one person share: compatibility-decomposed (NFKD, so NFKC-equal names meet),
 * case-folded, without any control, format or separator character (Cc, Cf, Zs, Zl, Zp — so no space
 * at all), each letter replaced by its Unicode TS #39 confusables prototype, then NFD. Not for display.
 */
export function personKey(name: string): string {
  let out = '';
  for (const c of name.normalize('NFKD')) out += map[c] ?? c;
  return out.normalize('NFD');
}

/**
 * Whether two names denote the same person (separation of duties): their {@link personKey}s are equal,
 * as the database's `bulkhead_same_person` decides.
 */
export function samePerson(a: string, b: string): boolean {
  return personKey(a) === personKey(b);
}

const INVISIBLE = /[\p{Cc}\p{Cf}]/gu;
const SPACES = /[\p{Zs}\p{Zl}\p{Zp}\t\n\v\f\r]+/gu;

/**
 * The spelling a person's name is stored in: NFKC, without control and format characters (zero-width
 * spaces, joiners, direction marks), every run of spaces one ASCII space, trimmed. Case is kept.
 */
export function tidyPersonName(name: string): string {
  return name.normalize('NFKC').replace(SPACES, ' ').replace(INVISIBLE, '').replace(/ {2,}/g, ' ').trim();
}

/**
 * Why a name cannot name a person, as a sentence, or null when it can: a name that mixes scripts in
 * one word (a Cyrillic о in a Latin `Bоb`) reads as someone else's name, and one with no letter or
 * digit at all names nobody.
 */
export function personNameProblem(name: string): string | null {
  const tidy = tidyPersonName(name);
  if (!/[\p{L}\p{N}]/u.test(tidy)) return 'a person is named with letters or digits, and this name has none';
  const [mixed] = mixedScriptWords(tidy);
  if (!mixed) return null;
  const odd = mixed.odd
    .map((l) => `"${l.char}" (U+${l.codePoint.toString(16).toUpperCase().padStart(4, '0')}) is ${l.script}`)
    .join(', ');
  return `"${mixed.word}" mixes ${mixed.scripts.join(' and ')} letters (${odd}): a name that mixes scripts can pass for someone else's, so write it in one script`;
}
