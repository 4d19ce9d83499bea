import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { formatIssues } from './errors.ts';

const TAIL = '. Nothing was done; call again with corrected arguments.';
const issues = (schema: z.ZodType, args: unknown) => {
  const parsed = schema.safeParse(args);
  if (parsed.success) throw new Error('expected the arguments to be refused');
  return formatIssues(parsed.error, args);
};

describe('formatIssues on hostile arguments', () => {
  const input = z.strictObject({ query: z.string().max(100) });

  it('shows the shape of a value nested deeper than JSON.stringify can go', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(issues(input, { query: deep })).toBe(
      `Invalid arguments — query: got [...], expected a value of type string${TAIL}`,
    );
  });

  it('names at most ten unknown arguments, each cut at 80 characters, and counts the rest', () => {
    const args: Record<string, unknown> = { query: 'ok', [`long${'y'.repeat(200)}`]: 1 };
    for (let i = 0; i < 5_000; i++) args[`k${i}`] = 1;
    expect(issues(input, args)).toBe(
      `Invalid arguments — "long${'y'.repeat(72)}..., "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8" and 4,991 more: ` +
        `not an argument of this tool; remove them${TAIL}`,
    );
  });
});
