import { describe, expect, it } from 'vitest';
import { checkNarrow, type Matcher } from './alertmanager.ts';

/** Whether checkNarrow lets `matchers` through (a silence of them names something in particular). */
function narrow(...matchers: Matcher[]): boolean {
  try {
    checkNarrow(matchers);
    return true;
  } catch {
    return false;
  }
}

const m = (op: Matcher['op'], value: string, label = 'alertname'): Matcher => ({ label, op, value });

describe('checkNarrow', () => {
  it('lets through a matcher that names alerts', () => {
    expect(narrow(m('=', 'DiskFull'))).toBe(true);
    expect(narrow(m('=~', 'db-.*', 'instance'))).toBe(true);
    expect(narrow(m('=~', 'Disk.*|High.*'))).toBe(true);
    expect(narrow(m('=~', '.+'), m('=', 'page', 'severity'))).toBe(true);
  });

  it('refuses matchers that match every alert, classes spanning the printable range included', () => {
    for (const value of [
      '.*',
      '.+',
      '[ -~]+',
      '[ -~]*',
      '\\S+',
      '[^é]+',
      '[\\w-]+',
      '(?s:.)+',
      '[[:print:]]+',
    ])
      expect(narrow(m('=~', value)), value).toBe(false);
    expect(narrow(m('!=', ''))).toBe(false);
    expect(narrow(m('!=', 'DiskFull'))).toBe(false);
    expect(narrow(m('!~', 'x'))).toBe(false);
    expect(narrow(m('=~', '.+'), m('!=', 'db-1', 'instance'))).toBe(false);
  });

  it('decides a pathological pattern in one linear pass (V8 backtracks for minutes on each)', () => {
    const value = '[-\\w]+|(((.*)*)*)*é|Value with spaces';
    expect(narrow(...Array.from({ length: 10 }, () => m('=~', value)))).toBe(false);
    expect(narrow(m('=~', value), m('=', 'DiskFull'))).toBe(true);
  });
});
