import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Sql } from '@bulkhead/db';

/**
 * How long the sealer lease lasts unless renewed: a sealer that dies without releasing it is replaced
 * this much later at most. The running sealer renews it every few ticks.
 */
export const LEASE_MS = 15_000;

type Conn = Sql | Parameters<Parameters<Sql['begin']>[1]>[0];

/** A name for one sealer process: host, process id and a random part (two sealers never share one). */
export function leaseHolder(): string {
  return `${hostname()}:${process.pid}:${randomBytes(6).toString('hex')}`;
}

/**
 * Takes the sealer lease for `holder`, or renews it when `holder` already has it. False when another
 * sealer holds an unexpired lease, or is taking it at this moment: the row is skipped when locked,
 * so nobody waits here. Needs no privilege but UPDATE on the lease row's two columns.
 */
export async function takeLease(sql: Conn, holder: string, ms = LEASE_MS): Promise<boolean> {
  const rows = await sql`
    update public.audit_sealer_lease l
    set holder = ${holder}, expires_at = now() + make_interval(secs => ${ms / 1000})
    where l.id in (select id from public.audit_sealer_lease
      where expires_at < now() or holder = ${holder} for update skip locked)
    returning 1`;
  return rows.length === 1;
}

/**
 * Renews the lease inside a seal's transaction, and fails it when `holder` lost the lease meanwhile:
 * a seal is written only by the sealer that holds the lease when it commits.
 */
export async function fenceLease(sql: Conn, holder: string, ms = LEASE_MS): Promise<void> {
  const rows = await sql`
    update public.audit_sealer_lease set expires_at = now() + make_interval(secs => ${ms / 1000})
    where id and holder = ${holder} returning 1`;
  if (rows.length !== 1) throw new Error('this sealer no longer holds the sealer lease; another one seals');
}

/** Gives the lease up, so that the next sealer need not wait for it to expire. */
export async function releaseLease(sql: Conn, holder: string): Promise<void> {
  await sql`
    update public.audit_sealer_lease set holder = null, expires_at = '-infinity'
    where id and holder = ${holder}`;
}
