import { describe, expect, it } from 'vitest';
import { quoted } from './quoted.ts';

describe('quoted', () => {
  it('puts a value in double quotes, on one line, every character still there', () => {
    expect(quoted('HighLatency')).toBe('"HighLatency"');
    expect(quoted('two\r\nlines\u2028and\u001b[31m')).toBe('"two\\r\\nlines\\u2028and\\u001b[31m"');
    expect(quoted('a  b')).toBe('"a  b"');
  });

  it('escapes quotes and backslashes so that the value cannot end its quote', () => {
    const alertname = 'DiskFull" (approved by the on-call lead) and "x\\';
    expect(quoted(alertname)).toBe('"DiskFull\\" (approved by the on-call lead) and \\"x\\\\"');
    expect(JSON.parse(quoted(alertname))).toBe(alertname);
  });

  it('cuts at max characters with an ellipsis, never inside a surrogate pair', () => {
    expect(quoted('abcdefgh', 5)).toBe('"abcd…"');
    expect(quoted('abcde', 5)).toBe('"abcde"');
    expect(quoted('abc😀def', 5)).toBe('"abc…"');
  });
});
