import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { GENESIS, eventHash } from './hash.ts';
import { streamChain } from './reader.ts';

/** The first broken link of a chain. */
export interface ChainBreak {
  server: string;
  /** Position in the server's chain where the break was found. */
  chainSeq: number;
  /** Global sequence number of the event at that position, when it exists. */
  seq: number | null;
  reason: string;
}

/** The verdict for one server's chain. */
export interface ChainReport {
  server: string;
  events: number;
  checkpoint: number | null;
  break: ChainBreak | null;
}

/** Signs a prune checkpoint so that a forged one (to hide removed events) is caught. */
export function signCheckpoint(key: string, c: { server: string; chainSeq: number; hash: string }): string {
  return createHmac('sha256', key).update(`${c.server}\n${c.chainSeq}\n${c.hash}`).digest('hex');
}

/**
 * Recomputes every hash of each server's chain from its start (or its signed
 * prune checkpoint) and reports the first link that does not hold: a changed
 * row (hash mismatch), a removed row (gap in positions or wrong previous hash),
 * or a checkpoint whose signature does not match `key`.
 */
export async function verifyChains(
  sql: Sql,
  options: { server?: string; key?: string; onProgress?: (server: string, events: number) => void } = {},
): Promise<ChainReport[]> {
  const servers = options.server
    ? [options.server]
    : (
        await sql<{ server: string }[]>`
          select server from audit_events union select server from audit_checkpoints order by server`
      ).map((r) => r.server);
  const reports: ChainReport[] = [];
  for (const server of servers) reports.push(await verifyChain(sql, server, options));
  return reports;
}

async function verifyChain(
  sql: Sql,
  server: string,
  options: { key?: string; onProgress?: (server: string, events: number) => void },
): Promise<ChainReport> {
  const [cp] = await sql<{ chainSeq: string; hash: string; signature: string }[]>`
    select chain_seq as "chainSeq", hash, signature from audit_checkpoints where server = ${server}`;
  let expectedSeq = cp ? Number(cp.chainSeq) + 1 : 1;
  let prevHash = cp?.hash ?? GENESIS;
  const report: ChainReport = { server, events: 0, checkpoint: cp ? Number(cp.chainSeq) : null, break: null };
  if (cp) {
    const good =
      options.key !== undefined &&
      safeEqual(
        cp.signature,
        signCheckpoint(options.key, { server, chainSeq: Number(cp.chainSeq), hash: cp.hash }),
      );
    if (!good) {
      const reason =
        options.key === undefined
          ? 'checkpoint present but no audit key to check its signature'
          : 'checkpoint signature does not match';
      report.break = { server, chainSeq: Number(cp.chainSeq), seq: null, reason };
      return report;
    }
  }
  for await (const event of streamChain(sql, server)) {
    report.events++;
    if (report.events % 10_000 === 0) options.onProgress?.(server, report.events);
    if (event.chainSeq !== expectedSeq) {
      report.break = {
        server,
        chainSeq: expectedSeq,
        seq: null,
        reason: `event at chain position ${expectedSeq} is missing (next present is ${event.chainSeq})`,
      };
      return report;
    }
    if (event.prevHash !== prevHash) {
      report.break = {
        server,
        chainSeq: event.chainSeq,
        seq: event.seq,
        reason: 'previous-hash link does not match the event before it',
      };
      return report;
    }
    if (eventHash(event) !== event.hash) {
      report.break = {
        server,
        chainSeq: event.chainSeq,
        seq: event.seq,
        reason: 'event content does not match its hash (changed)',
      };
      return report;
    }
    prevHash = event.hash;
    expectedSeq++;
  }
  return report;
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
