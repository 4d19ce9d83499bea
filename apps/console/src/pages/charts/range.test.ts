import { describe, expect, it } from 'vitest';
import { bucketStarts, parseRange } from './range.ts';

const now = new Date('2026-12-04T18:30:15Z');

describe('the charts range', () => {
  it('is the day up to the end of this minute by hour when the form names nothing, 25 hours touched', () => {
    const asked = parseRange({}, now);
    expect(asked).toEqual({
      range: {
        from: new Date('2026-12-03T18:31:00Z'),
        to: new Date('2026-12-04T18:31:00Z'),
        bucket: 'hour',
      },
      fields: { from: '2026-12-03T18:31', to: '2026-12-04T18:31', bucket: 'hour' },
    });
    if (!('range' in asked)) throw new Error('no range');
    const starts = bucketStarts(asked.range);
    expect([starts.length, starts[0], starts.at(-1)]).toEqual([
      25,
      new Date('2026-12-03T18:00:00Z'),
      new Date('2026-12-04T18:00:00Z'),
    ]);
  });

  it('is the last 30 days by day, or the span the form names, in UTC', () => {
    const byDay = parseRange({ bucket: 'day' }, now);
    expect('range' in byDay && bucketStarts(byDay.range).length).toBe(31);
    expect(parseRange({ from: '2026-11-01T00:00', to: '2026-11-08T00:00', bucket: 'day' }, now)).toEqual({
      range: { from: new Date('2026-11-01T00:00:00Z'), to: new Date('2026-11-08T00:00:00Z'), bucket: 'day' },
      fields: { from: '2026-11-01T00:00', to: '2026-11-08T00:00', bucket: 'day' },
    });
  });

  it('refuses what it cannot draw, saying why and keeping what was typed', () => {
    expect(parseRange({ bucket: 'week' }, now)).toEqual({
      error: 'Choose to count by hour or by day.',
      fields: { from: '', to: '', bucket: 'week' },
    });
    expect(parseRange({ to: '2026-02-31T00:00' }, now)).toMatchObject({
      error: 'The end is not a date and time (2026-12-04T18:00).',
    });
    expect(parseRange({ from: 'yesterday' }, now)).toMatchObject({
      error: 'The start is not a date and time (2026-12-04T18:00).',
    });
    expect(parseRange({ from: '2026-12-04T10:00', to: '2026-12-04T10:00' }, now)).toMatchObject({
      error: 'The start must come before the end.',
    });
    expect(parseRange({ from: '2026-11-01T00:00', to: '2026-11-15T00:00' }, now)).toHaveProperty('range');
    expect(parseRange({ from: '2026-11-01T00:00', to: '2026-11-15T00:01' }, now)).toMatchObject({
      error: 'By hour, a range may span at most 14 days; count by day for longer ones.',
    });
    expect(
      parseRange({ from: '2025-01-01T00:00', to: '2026-01-02T00:01', bucket: 'day' }, now),
    ).toMatchObject({
      error: 'By day, a range may span at most 366 days.',
    });
  });
});
