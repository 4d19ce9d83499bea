import type { X509Certificate } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { checkpointHash, readCheckpoints, type SignedCheckpoint } from './checkpoint.ts';
import { checkTimestamp, requestTimestamp } from './timestamp.ts';

/**
 * How long after a checkpoint says it was made its timestamp may be: a timestamp later than this does
 * not show the checkpoint was made when it says (it may have been backdated), and is a break. The
 * sealer asks for none past it.
 */
export const TIMESTAMP_LATE_MS = 10 * 60_000;
/** How far a TSA's clock may run behind the sealer's. */
const CLOCK_SKEW_MS = 60_000;

/** The timestamp token of the checkpoint of seal `sealNo`, if it has one. */
export async function readTimestamp(sql: Sql, sealNo: number): Promise<Buffer | undefined> {
  const [row] = await sql<{ token: Buffer }[]>`
    select token from public.audit_checkpoint_timestamps where seal_no = ${sealNo}`;
  return row?.token;
}

/**
 * Asks the TSA at `url` to timestamp every checkpoint that has no timestamp yet and was made less than
 * {@link TIMESTAMP_LATE_MS} ago, oldest first, and stores the tokens. Run after a seal commits (a slow
 * or absent TSA never holds a seal up); a checkpoint the TSA was away for longer stays without one.
 * Returns how many it stamped.
 */
export async function timestampCheckpoints(sql: Sql, url: string, timeoutMs = 5000): Promise<number> {
  let stamped = 0;
  for (;;) {
    const due = await sql<{ n: string }[]>`
      select seal_no as n from public.audit_signed_checkpoints c
      where c.sealed_at >= now() - ${`${TIMESTAMP_LATE_MS} milliseconds`}::interval
        and not exists (select 1 from public.audit_checkpoint_timestamps t where t.seal_no = c.seal_no)
      order by seal_no limit 20`;
    if (due.length === 0) return stamped;
    for (const { n } of due) {
      const [c] = await readCheckpoints(sql, Number(n) - 1, 1);
      const hash = Buffer.from(checkpointHash(c!), 'hex');
      const token = await requestTimestamp(url, hash, AbortSignal.timeout(timeoutMs));
      // Two sealer passes may stamp the same checkpoint: the first token stays.
      const written = await sql`
        insert into public.audit_checkpoint_timestamps (seal_no, token) values (${c!.sealNo}, ${token})
        on conflict (seal_no) do nothing`;
      stamped += written.count;
    }
  }
}

/**
 * What does not hold of a checkpoint's timestamp, checked with the TSA's certificate: not by that TSA,
 * over another checkpoint, or later than {@link TIMESTAMP_LATE_MS} after the checkpoint says it was made
 * (or before). Undefined when it holds.
 */
export function timestampProblem(
  c: SignedCheckpoint,
  token: Buffer,
  tsa: X509Certificate,
): string | undefined {
  let at: Date;
  try {
    at = checkTimestamp(token, Buffer.from(checkpointHash(c), 'hex'), tsa);
  } catch (err) {
    return `the timestamp of the checkpoint of seal ${c.sealNo} does not hold: ${err instanceof Error ? err.message : String(err)}`;
  }
  const late = at.getTime() - c.sealedAt.getTime();
  if (late > TIMESTAMP_LATE_MS)
    return `the checkpoint of seal ${c.sealNo} says it was made at ${c.sealedAt.toISOString()}, but was timestamped only at ${at.toISOString()}: it may have been made later than it says`;
  if (late < -CLOCK_SKEW_MS)
    return `the checkpoint of seal ${c.sealNo} says it was made at ${c.sealedAt.toISOString()}, after its timestamp (${at.toISOString()})`;
  return undefined;
}
