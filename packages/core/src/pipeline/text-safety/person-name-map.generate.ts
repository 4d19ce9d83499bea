// Writes person-name-map.json, the one table both implementations of a person's key read: this kit's
// TypeScript (person-name.ts) and the database's `bulkhead_person_key` (migration 0049 embeds the same
// JSON). Run with `pnpm --filter @bulkhead/core exec tsx src/pipeline/text-safety/person-name-map.generate.ts`;
// a migration already applied keeps its copy, so a new table needs a new migration.
//
// For each code point of a decomposed (NFKD) name, what it becomes in the key: case-folded (upper then
// lower case, so that ß and SS, ς and Σ meet), nothing when it is a control, format or separator
// character (Cc, Cf, Zs, Zl, Zp: tabs, no-break and ideographic spaces, zero-width joiners), and each
// remaining character replaced by its prototype from Unicode's confusables table (TS #39, as shipped by
// the `unhomoglyph` package), so that Cyrillic о and Latin o are one letter. Code points that stay
// themselves are left out.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const confusables = createRequire(import.meta.url)('unhomoglyph/data.json') as Record<string, string>;
const GONE = /^[\p{Cc}\p{Cf}\p{Zs}\p{Zl}\p{Zp}]$/u;

function entry(char: string): string {
  const folded = char.toUpperCase().toLowerCase().normalize('NFD');
  let out = '';
  for (const c of folded) if (!GONE.test(c)) out += confusables[c] ?? c;
  return out.normalize('NFD');
}

const map: Record<string, string> = {};
for (let cp = 0; cp <= 0x10ffff; cp++) {
  // Surrogates are no characters, and NUL can be no part of a text in PostgreSQL (nor its JSON).
  if (cp === 0 || (cp >= 0xd800 && cp <= 0xdfff)) continue;
  const char = String.fromCodePoint(cp);
  // Only what can occur in a decomposed name: a character NFKD changes never reaches the table.
  if (char.normalize('NFKD') !== char) continue;
  const to = entry(char);
  if (to !== char) map[char] = to;
}
writeFileSync(new URL('./person-name-map.json', import.meta.url), `${JSON.stringify(map, null, 2)}\n`);
console.log(`${Object.keys(map).length} code points`);
