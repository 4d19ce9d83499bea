import { seedDemo, type DemoCounts } from '@bulkhead/demo';
import { parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { UsageError } from '../io.ts';

const LABELS: Record<keyof DemoCounts, string> = {
  customers: 'customers',
  invoices: 'invoices',
  invoice_lines: 'invoice lines',
  payments: 'payments',
  credit_notes: 'credit notes',
  tickets: 'tickets',
  ticket_messages: 'ticket messages',
};

/** "50 customers, 500 invoices, ..." */
export function describeCounts(counts: DemoCounts): string {
  return (Object.keys(LABELS) as (keyof DemoCounts)[]).map((k) => `${counts[k]} ${LABELS[k]}`).join(', ');
}

/** `bulkhead db seed --demo`. */
export const seedCommand: Command = {
  name: 'seed',
  summary: 'load the demo data set (customers, invoices, tickets)',
  help: `Usage: bulkhead db seed --demo [--seed <n>] [--json]

Loads the demo data set: 50 customers (C-1001…), 500 invoices (R-2026-0001…)
in every state with lines, payments and credit notes, and 300 helpdesk
tickets (T-1001…) with messages, some in German and a few whose text tries
to instruct an assistant. The same seed gives the same rows every time.
Safe to run twice: rows that exist are left alone, nothing is deleted.

Options:
  --demo       required: the demo data set is the only one there is
  --seed <n>   another PRNG seed for a different (still repeatable) data set
  --json       print { seed, inserted, dataset } as JSON`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      demo: { type: 'boolean', default: false },
      seed: { type: 'string' },
      json: { type: 'boolean', default: false },
    });
    if (!values.demo)
      throw new UsageError(
        'give --demo: the demo data set is the only data set there is (your own data comes from your systems, not from seed)',
      );
    let seed: number | undefined;
    if (values.seed !== undefined) {
      if (!/^\d{1,9}$/.test(values.seed)) throw new UsageError('--seed: a whole number, e.g. 42');
      seed = Number(values.seed);
    }
    return withDatabase(env, io, async ({ sql }) => {
      const result = await seedDemo(sql, {
        ...(seed !== undefined ? { seed } : {}),
        progress: (line) => io.progress(`Seeding ${line}`),
      });
      if (values.json) {
        io.out(JSON.stringify(result));
        return 0;
      }
      const nothing = Object.values(result.inserted).every((n) => n === 0);
      io.out(
        nothing
          ? `The demo data is already there (seed ${result.seed}); nothing inserted.`
          : `Inserted ${describeCounts(result.inserted)} (seed ${result.seed}).`,
      );
      if (!nothing && Object.values(result.inserted).some((n, i) => n !== Object.values(result.dataset)[i]))
        io.out(
          `Some rows already existed and were left alone; the data set has ${describeCounts(result.dataset)}.`,
        );
      io.out('Try it: pnpm bulkhead tokens issue --server customer --customer C-1001 --label demo');
      return 0;
    });
  },
};
