import type { Sql } from '@bulkhead/db';
import { leaseHolder } from '../lease.ts';
import type { ForwardDestination } from './destination.ts';
import { advanceDestination, holdDestination, readSealedBatch, releaseDestination } from './position.ts';

/** Most events one batch carries. */
export const FORWARD_BATCH = 500;

/** What one pass did for one destination. */
export interface ForwardPass {
  /** False when another forwarder holds the destination (nothing was done). */
  held: boolean;
  /** Events the destination acknowledged in this pass. */
  forwarded: number;
  /** Numbers a seal lists whose event was gone, left out. */
  missing: number[];
  /** Whether more sealed events wait. */
  more: boolean;
}

/**
 * Forwards the next batch of sealed events to `destination`, and moves its durable position past them
 * once it acknowledged them (never before: a failure, a crash or a restart in between sends the batch
 * again).
 */
export async function forwardBatch(
  sql: Sql,
  destination: ForwardDestination,
  holder: string,
  batchSize = FORWARD_BATCH,
): Promise<ForwardPass> {
  const from = await holdDestination(sql, destination.name, holder);
  if (!from) return { held: false, forwarded: 0, missing: [], more: false };
  const batch = await readSealedBatch(sql, from, batchSize);
  if (batch.next.sealNo === from.sealNo && batch.next.sent === from.sent)
    return { held: true, forwarded: 0, missing: [], more: false };
  if (batch.events.length) await destination.deliver(batch.events);
  await advanceDestination(sql, destination.name, holder, batch.next, batch.events.length);
  return { held: true, forwarded: batch.events.length, missing: batch.missing, more: batch.more };
}

/**
 * Forwards everything sealed so far to `destination` (`bulkhead audit forward` without `--follow`):
 * batch after batch until none is left; a failure rejects, with what was acknowledged before it kept.
 */
export async function forwardAll(
  sql: Sql,
  destination: ForwardDestination,
  options: { batchSize?: number; onPass?: (pass: ForwardPass) => void } = {},
): Promise<{ held: boolean; forwarded: number }> {
  const holder = leaseHolder();
  let forwarded = 0;
  try {
    for (;;) {
      const pass = await forwardBatch(sql, destination, holder, options.batchSize);
      if (!pass.held) return { held: false, forwarded };
      forwarded += pass.forwarded;
      options.onPass?.(pass);
      if (!pass.more) return { held: true, forwarded };
    }
  } finally {
    await releaseDestination(sql, destination.name, holder).catch(() => {});
  }
}

/** A running forwarder. */
export interface Forwarder {
  /** Looks for newly sealed events now rather than at the next interval (the sealer calls it after a seal). */
  nudge(): void;
  /** Ends the loops once their batch in flight is acknowledged or failed, and gives the destinations up. */
  stop(): Promise<void>;
}

/** How a forwarder loop paces itself. */
export interface ForwarderOptions {
  /** How often it looks for newly sealed events when caught up (default 1000 ms). */
  intervalMs?: number;
  /** The first wait after a failure, doubled after each further one (default 500 ms). */
  retryMs?: number;
  /** The longest wait after failures (default 5000 ms). */
  maxRetryMs?: number;
  batchSize?: number;
  onError?: (destination: string, err: unknown) => void;
  onPass?: (destination: string, pass: ForwardPass) => void;
}

/**
 * Forwards sealed events to each destination, on its own loop (a receiver that is down holds back only
 * its own stream), until stopped: batch after batch while sealed events wait, then every interval or
 * when nudged; after a failure, again from the durable position, waiting longer after each failure in
 * a row. Off every call's path: calls append events whatever the destinations do.
 */
export function startForwarder(
  sql: Sql,
  destinations: readonly ForwardDestination[],
  options: ForwarderOptions = {},
): Forwarder {
  const holder = leaseHolder();
  const interval = options.intervalMs ?? 1000;
  const retry = options.retryMs ?? 500;
  const maxRetry = options.maxRetryMs ?? 5000;
  let stopped = false;
  // Waits end early on stop; a nudge ends only the waits of loops that are caught up, not a retry's.
  const waits = new Map<() => void, boolean>();
  const sleep = (ms: number, nudged: boolean) =>
    new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        waits.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      waits.set(wake, nudged);
    });
  const loop = async (destination: ForwardDestination) => {
    let failures = 0;
    while (!stopped) {
      try {
        const pass = await forwardBatch(sql, destination, holder, options.batchSize);
        failures = 0;
        if (pass.forwarded || pass.missing.length) options.onPass?.(destination.name, pass);
        if (pass.more) continue;
        await sleep(interval, true);
      } catch (err) {
        options.onError?.(destination.name, err);
        failures++;
        await sleep(Math.min(maxRetry, retry * 2 ** (failures - 1)), false);
      }
    }
    await releaseDestination(sql, destination.name, holder).catch(() => {});
  };
  const loops = destinations.map(loop);
  return {
    nudge() {
      for (const [wake, nudged] of [...waits]) if (nudged) wake();
    },
    async stop() {
      stopped = true;
      for (const wake of [...waits.keys()]) wake();
      await Promise.all(loops);
    },
  };
}
