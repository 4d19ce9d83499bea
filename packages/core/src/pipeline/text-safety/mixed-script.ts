// Letters of different scripts can look the same: Cyrillic а (U+0430) and Latin a, Greek ο and Latin o.
// One such letter makes `аnna@nordlicht.example` another address than the one a person reads, so a word
// that mixes scripts is flagged wherever a person decides on text from outside.

// Every script of Unicode 17 with letters of its own.
const SCRIPTS = `
Latin Cyrillic Greek Armenian Georgian Hebrew Arabic Syriac Thaana Nko Samaritan Mandaic Devanagari
Bengali Gurmukhi Gujarati Oriya Tamil Telugu Kannada Malayalam Sinhala Thai Lao Tibetan Myanmar
Hangul Ethiopic Cherokee Canadian_Aboriginal Ogham Runic Tagalog Hanunoo Buhid Tagbanwa Khmer
Mongolian Limbu Tai_Le New_Tai_Lue Buginese Tai_Tham Balinese Sundanese Batak Lepcha Ol_Chiki
Glagolitic Tifinagh Han Hiragana Katakana Bopomofo Yi Lisu Vai Bamum Syloti_Nagri Phags_Pa
Saurashtra Kayah_Li Rejang Javanese Cham Tai_Viet Meetei_Mayek Coptic Braille Osage Adlam Deseret
Shavian Osmanya Gothic Old_Italic Old_Permic Old_Hungarian Old_Turkic Linear_A Linear_B Cypriot
Lycian Carian Lydian Ugaritic Old_Persian Phoenician Kharoshthi Brahmi Kaithi Chakma Sharada Takri
Mro Miao Pahawh_Hmong Wancho Medefaidrin Vithkuqi Todhri Garay Sunuwar Kirat_Rai Ol_Onal
Gurung_Khema Tulu_Tigalari Nag_Mundari Kawi Tangsa Toto Cypro_Minoan Old_Uyghur Yezidi Chorasmian
Dives_Akuru Khitan_Small_Script Elymaic Nandinagari Nyiakeng_Puachue_Hmong Hanifi_Rohingya
Old_Sogdian Sogdian Dogra Gunjala_Gondi Makasar Masaram_Gondi Zanabazar_Square Soyombo Newa
Bhaiksuki Marchen Tangut Nushu Ahom Anatolian_Hieroglyphs Multani SignWriting Bassa_Vah
Caucasian_Albanian Duployan Elbasan Grantha Khojki Khudawadi Mahajani Manichaean Mende_Kikakui Modi
Nabataean Old_North_Arabian Palmyrene Pau_Cin_Hau Psalter_Pahlavi Siddham Tirhuta Warang_Citi Hatran
Avestan Imperial_Aramaic Inscriptional_Pahlavi Inscriptional_Parthian Old_South_Arabian
Meroitic_Cursive Meroitic_Hieroglyphs Sora_Sompeng Egyptian_Hieroglyphs Cuneiform
`
  .trim()
  .split(/\s+/)
  // A Node whose Unicode tables do not know a newer script yet skips it (its letters count as no script).
  .flatMap((name) => {
    try {
      return [{ name: name.replaceAll('_', ' '), test: new RegExp(`^\\p{Script=${name}}$`, 'u') }];
    } catch {
      return [];
    }
  });

const NO_SCRIPT = /^[\p{Script=Common}\p{Script=Inherited}]$/u;
const cache = new Map<number, string | null>();

/**
 * The script of one code point (`Latin`, `Cyrillic`, `Canadian Aboriginal`),
 * or null for what belongs to none: digits 0–9, punctuation, symbols, spaces,
 * combining marks that take the script of their base.
 */
export function scriptOf(cp: number): string | null {
  if (cp < 0x80) return (cp | 0x20) >= 0x61 && (cp | 0x20) <= 0x7a ? 'Latin' : null;
  const known = cache.get(cp);
  if (known !== undefined) return known;
  const ch = String.fromCodePoint(cp);
  const script = NO_SCRIPT.test(ch) ? null : (SCRIPTS.find((s) => s.test.test(ch))?.name ?? null);
  if (cache.size < 10_000) cache.set(cp, script);
  return script;
}

// Scripts that ordinary writing combines in one word (Unicode TS #39, "highly restrictive").
const TOGETHER = [
  new Set(['Latin', 'Han', 'Hiragana', 'Katakana']),
  new Set(['Latin', 'Han', 'Bopomofo']),
  new Set(['Latin', 'Han', 'Hangul']),
];

/** A letter of a mixed-script word that is not of the word's main script. */
export interface OddLetter {
  /** UTF-16 offset in the text. */
  index: number;
  char: string;
  codePoint: number;
  script: string;
}

/** A word whose letters come from scripts that writing does not mix. */
export interface MixedScriptWord {
  /** UTF-16 offset of the word in the text. */
  index: number;
  word: string;
  /** Its scripts, the main one first, then by first appearance. */
  scripts: string[];
  /** Its most frequent script (Latin on a tie, else the first): the one a reader takes it for. */
  main: string;
  /** Every letter not of the main script, in order. */
  odd: OddLetter[];
}

const EDGES = /^[\p{P}\p{S}]+|[\p{P}\p{S}]+$/gu;

/**
 * Words (runs between ASCII whitespace, less the punctuation and symbols at
 * their ends, so an e-mail address is one word and no invisible or exotic
 * space can split one) that mix letters of different scripts, such as Latin
 * with Cyrillic. Combinations writing uses — Latin with Japanese kana and Han,
 * Chinese with Bopomofo, Korean with Han — are not mixed. Letters of one
 * script that look like another (an all-Cyrillic `сосо`) are not found here:
 * they are a whole word of that script.
 */
export function mixedScriptWords(text: string): MixedScriptWord[] {
  const found: MixedScriptWord[] = [];
  for (const m of text.matchAll(/[^\t\n\v\f\r ]+/g)) {
    // Quotes, brackets and full stops around a word are not part of it (they belong to no script).
    const word = m[0].replace(EDGES, '');
    const start = m.index + m[0].search(/[^\p{P}\p{S}]/u);
    const letters: OddLetter[] = [];
    let offset = start;
    for (const char of word) {
      const codePoint = char.codePointAt(0)!;
      const script = scriptOf(codePoint);
      if (script) letters.push({ index: offset, char, codePoint, script });
      offset += char.length;
    }
    const counts = new Map<string, number>();
    for (const l of letters) counts.set(l.script, (counts.get(l.script) ?? 0) + 1);
    if (counts.size < 2) continue;
    const scripts = [...counts.keys()];
    if (TOGETHER.some((allowed) => scripts.every((s) => allowed.has(s)))) continue;
    const main = scripts.reduce((best, s) =>
      counts.get(s)! > counts.get(best)! || (counts.get(s) === counts.get(best) && s === 'Latin') ? s : best,
    );
    found.push({
      index: start,
      word,
      scripts: [main, ...scripts.filter((s) => s !== main)],
      main,
      odd: letters.filter((l) => l.script !== main),
    });
  }
  return found;
}
