import { describe, expect, it } from 'vitest';
import { mixedScriptWords, scriptOf } from './mixed-script.ts';

describe('mixedScriptWords', () => {
  it('flags a Cyrillic letter in a Latin e-mail address, with its offset and script', () => {
    const text = 'email "anna@nordlicht.example" → "\u0430nna@nordlicht.example"';
    expect(mixedScriptWords(text)).toEqual([
      {
        index: 34,
        word: '\u0430nna@nordlicht.example',
        scripts: ['Latin', 'Cyrillic'],
        main: 'Latin',
        odd: [{ index: 34, char: '\u0430', codePoint: 0x430, script: 'Cyrillic' }],
      },
    ]);
  });

  it('takes the most frequent script as the main one, Latin on a tie', () => {
    expect(mixedScriptWords('Москвa')).toEqual([
      {
        index: 0,
        word: 'Москвa',
        scripts: ['Cyrillic', 'Latin'],
        main: 'Cyrillic',
        odd: [{ index: 5, char: 'a', codePoint: 0x61, script: 'Latin' }],
      },
    ]);
    expect(mixedScriptWords('Αθήνα-Москва x\u0430').map((w) => [w.word, w.main, w.scripts])).toEqual([
      ['Αθήνα-Москва', 'Cyrillic', ['Cyrillic', 'Greek']],
      ['x\u0430', 'Latin', ['Latin', 'Cyrillic']],
    ]);
  });

  it('lets alone single-script words, digits and punctuation, and the combinations writing uses', () => {
    expect(
      mixedScriptWords('Grüße aus Köln, Москва 2026, Αθήνα, 東京タワー, Tシャツ, 한국語, C-1001!'),
    ).toEqual([]);
  });

  it('does not let an invisible or exotic space split a word', () => {
    expect(mixedScriptWords('\u0430\u200bdmin \u0430\u00a0dmin').map((w) => w.word)).toEqual([
      '\u0430\u200bdmin',
      '\u0430\u00a0dmin',
    ]);
  });

  it('knows the script of a code point, and none for digits, punctuation and combining marks', () => {
    expect([0x61, 0x430, 0x3b1, 0x5d0, 0x1401, 0x30, 0x40, 0x301, 0x20ac].map(scriptOf)).toEqual([
      'Latin',
      'Cyrillic',
      'Greek',
      'Hebrew',
      'Canadian Aboriginal',
      null,
      null,
      null,
      null,
    ]);
  });
});
