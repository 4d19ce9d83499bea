import type { Sql } from '@bulkhead/core';

/** Days and weekdays (ISO Monday to Friday) from `from` to `to`, both included. */
export async function weekdaysBetween(
  sql: Sql,
  from: string,
  to: string,
): Promise<{ days: number; weekdays: number }> {
  const [row] = await sql<{ days: number; weekdays: number }[]>`
    select count(*)::int as days, (count(*) filter (where extract(isodow from d) < 6))::int as weekdays
    from generate_series(${from}::date, ${to}::date, interval '1 day') as d`;
  return row!;
}
