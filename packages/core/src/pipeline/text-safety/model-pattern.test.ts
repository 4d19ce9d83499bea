import { describe, expect, it } from 'vitest';
import { compileModelPattern, ModelPatternError } from './model-pattern.ts';

/** The reason a pattern is refused with. */
function refusal(source: string, options?: Parameters<typeof compileModelPattern>[1]): string {
  try {
    compileModelPattern(source, options);
  } catch (err) {
    expect(err).toBeInstanceOf(ModelPatternError);
    return (err as ModelPatternError).reason;
  }
  throw new Error(`${source} was accepted`);
}

describe('compileModelPattern', () => {
  it('matches the whole value, or anywhere, with RE2 semantics', () => {
    const p = compileModelPattern('db-[0-9]+|web');
    expect(p.source).toBe('db-[0-9]+|web');
    expect(['db-1', 'web', 'db-', 'xweb', 'db-12x'].map((v) => p.matchesWhole(v))).toEqual([
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(['xweb', 'a db-7 b', 'db-'].map((v) => p.matchesSomewhere(v))).toEqual([true, true, false]);
    expect(compileModelPattern('\\p{Greek}+').matchesWhole('αβγ')).toBe(true);
  });

  // On V8's RegExp each of these runs for minutes or longer: the engine backtracks through every way
  // of splitting the input among the nested stars. Here each is a single linear pass.
  it('answers patterns that backtrack catastrophically in V8', () => {
    const long = `${'x'.repeat(40)}!`;
    expect(compileModelPattern('((.*)*)*é').matchesWhole(long)).toBe(false);
    expect(compileModelPattern('(x+x+)+y').matchesWhole(long)).toBe(false);
    expect(compileModelPattern('[-\\w]+|((.*)*)*é|Value with spaces').matchesWhole(long)).toBe(false);
    expect(compileModelPattern('(a|a)*b').matchesSomewhere('a'.repeat(200))).toBe(false);
  });

  it('refuses what RE2 (and so Alertmanager) refuses: lookaround, backreferences, bad syntax', () => {
    expect(refusal('a(?=b)')).toBe('not a valid RE2 regex: invalid or unsupported Perl syntax: `(?=`');
    expect(refusal('(a)\\1')).toBe('not a valid RE2 regex: invalid escape sequence: `\\1`');
    expect(refusal('(unclosed')).toBe('not a valid RE2 regex: missing closing ): `(unclosed`');
  });

  it('refuses a pattern too long, nested too deep or repeated too often, before parsing it', () => {
    expect(refusal('a'.repeat(201))).toBe('longer than 200 characters (201)');
    expect(refusal('abc', { maxLength: 2 })).toBe('longer than 2 characters (3)');
    expect(refusal('((((((a))))))')).toBe('groups nested deeper than 5');
    expect(compileModelPattern('(((((a)))))').matchesWhole('a')).toBe(true);
    // Parentheses that are escaped or inside a class are no groups.
    expect(compileModelPattern('\\(\\(\\(\\(\\(\\([((((((]').matchesWhole('(((((((')).toBe(true);
    expect(refusal('\\pL{101}')).toBe('a counted repetition over 100');
    expect(refusal('a{2,500}')).toBe('a counted repetition over 100');
    expect(compileModelPattern('a{2,100}').matchesWhole('aaa')).toBe(true);
  });
});
