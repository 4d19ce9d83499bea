import { appendFileSync } from 'node:fs';

/**
 * One row of the table `pnpm test:scale` prints. The columns the issue names come first; anything
 * else a scenario measured goes into `other` (name → value). Missing columns print as "—".
 */
export interface ScaleFigures {
  scenario: string;
  attempted?: number;
  served?: number;
  /** Answered with a clear error (the call was refused or lost, and said so). */
  refused?: number;
  /** No answer within the call's time limit plus a grace: must be 0. */
  hung?: number;
  effectsWithoutEvents?: number;
  doubleExecutions?: number;
  recoverSeconds?: number;
  other?: Record<string, string | number>;
}

/**
 * Prints the row and, when `pnpm test:scale` runs the file (BULKHEAD_SCALE_FIGURES names its
 * file), appends it there as one JSON line for the closing table.
 */
export function recordFigures(row: ScaleFigures): void {
  console.log(`figures ${JSON.stringify(row)}`);
  // The scale runner is the one reader of this variable (it sets it for its vitest child).
  const file = process.env.BULKHEAD_SCALE_FIGURES;
  if (file) appendFileSync(file, `${JSON.stringify(row)}\n`);
}
