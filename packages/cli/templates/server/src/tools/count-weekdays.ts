import { dateArg, defineTool, READ_ONLY, svgIcon, ToolError } from '@bulkhead/core';
import { z } from 'zod';
import { weekdaysBetween } from '../queries.ts';

// The example tool of a new server: one read, its description beside its handler, a named query,
// an error the model can act on. Replace it with the server's own tools, one a file.

/** The longest range counted: a sanity limit, enforced but not listed. */
const MAX_DAYS = 3660;

export const countWeekdays = defineTool({
  name: 'count_weekdays',
  title: 'Count weekdays',
  description:
    'Counts the days from one date to another, both included, and the weekdays (Monday to Friday) among them. ' +
    'Returns from, to, days, weekdays. from and to: dates like 2026-03-02; to is not before from. ' +
    'Only the calendar: public holidays are not known.',
  scope: '__READ_SCOPE__',
  input: z.strictObject({
    from: dateArg.describe('The first day counted, e.g. 2026-03-02.'),
    to: dateArg.describe('The last day counted, e.g. 2026-03-15.'),
  }),
  output: z.object({ from: z.string(), to: z.string(), days: z.number(), weekdays: z.number() }),
  annotations: READ_ONLY,
  icons: svgIcon("<path d='M1 3h14v12H1zm2 4h10v6H3zM4 1h2v3H4zm6 0h2v3h-2z' fill-rule='evenodd'/>"),
  timeoutMs: 5_000,
  handler: async ({ from, to }, ctx) => {
    if (to < from) throw new ToolError(`to (${to}) is before from (${from}) — give the earlier date as from`);
    if ((Date.parse(to) - Date.parse(from)) / 86_400_000 >= MAX_DAYS)
      throw new ToolError(`from ${from} to ${to} is more than ${MAX_DAYS} days — count a shorter range`);
    return { from, to, ...(await weekdaysBetween(ctx.sql, from, to)) };
  },
});
