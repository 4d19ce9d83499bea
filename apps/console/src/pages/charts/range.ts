/** How the charts count over time: per hour or per day, in UTC. */
export type Bucket = 'hour' | 'day';

/** The span the charts show: from (inclusive) to (exclusive), counted per bucket. */
export interface ChartRange {
  from: Date;
  to: Date;
  bucket: Bucket;
}

/** The range form's fields as they were sent, to give them back with an error. */
export interface RangeFields {
  from: string;
  to: string;
  bucket: string;
}

const STEP_MS: Record<Bucket, number> = { hour: 3_600_000, day: 86_400_000 };
/** Enough columns to read a fortnight by hour or a year by day; more would be thinner than a pixel. */
const MAX_BUCKETS: Record<Bucket, number> = { hour: 14 * 24, day: 366 };
/** The span shown when the form names no start: a day by hour, a month by day. */
const DEFAULT_SPAN_MS: Record<Bucket, number> = { hour: 86_400_000, day: 30 * 86_400_000 };
const FIELD = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/;

/** A time as the form's `datetime-local` field holds it (UTC, to the minute): `2026-12-04T18:00`. */
export function fieldValue(d: Date): string {
  return d.toISOString().slice(0, 16);
}

function parseField(value: string): Date | undefined {
  if (!FIELD.test(value)) return undefined;
  const d = new Date(`${value}:00Z`);
  // `2026-02-31T00:00` parses as 3 March: only a time that reads back the same is one.
  return Number.isNaN(d.getTime()) || fieldValue(d) !== value ? undefined : d;
}

/** The start of the bucket `d` falls in. */
export function bucketStart(d: Date, bucket: Bucket): Date {
  const step = STEP_MS[bucket];
  return new Date(Math.floor(d.getTime() / step) * step);
}

/** The start of every bucket the range touches, oldest first. */
export function bucketStarts(range: ChartRange): Date[] {
  const starts: Date[] = [];
  for (
    let t = bucketStart(range.from, range.bucket).getTime();
    t < range.to.getTime();
    t += STEP_MS[range.bucket]
  )
    starts.push(new Date(t));
  return starts;
}

/**
 * The range the form asks for, or why it cannot be shown. Without fields: the day up to the end of the
 * current minute, by hour (by day: the last 30 days).
 */
export function parseRange(
  query: Partial<RangeFields>,
  now = new Date(),
): { range: ChartRange; fields: RangeFields } | { error: string; fields: RangeFields } {
  const given: RangeFields = { from: query.from ?? '', to: query.to ?? '', bucket: query.bucket ?? 'hour' };
  if (given.bucket !== 'hour' && given.bucket !== 'day')
    return { error: 'Choose to count by hour or by day.', fields: given };
  const bucket: Bucket = given.bucket;
  const to = given.to ? parseField(given.to) : new Date(Math.ceil(now.getTime() / 60_000) * 60_000);
  if (!to) return { error: 'The end is not a date and time (2026-12-04T18:00).', fields: given };
  const from = given.from ? parseField(given.from) : new Date(to.getTime() - DEFAULT_SPAN_MS[bucket]);
  if (!from) return { error: 'The start is not a date and time (2026-12-04T18:00).', fields: given };
  const fields = { from: fieldValue(from), to: fieldValue(to), bucket };
  if (from >= to) return { error: 'The start must come before the end.', fields };
  const range = { from, to, bucket };
  if (bucketStarts(range).length > MAX_BUCKETS[bucket])
    return {
      error:
        bucket === 'hour'
          ? 'By hour, a range may span at most 14 days; count by day for longer ones.'
          : 'By day, a range may span at most 366 days.',
      fields,
    };
  return { range, fields };
}
