import type { AuditEventInput, AuditWriter, Outcome } from '@bulkhead/audit';
import type { Logger } from 'pino';
import { createEventOwner, type RequestAudit } from '../../pipeline/observability/request-audit.ts';

/** Audits refusals; unauthenticated ones are limited per source address and summarised. */
export interface RefusalLog {
  /**
   * Writes the refused request's event (through its owner, `request`, where it has one); for a
   * request without a valid token, only the first few per source and minute (the rest are waived,
   * counted into a summary).
   */
  record(
    event: AuditEventInput,
    options: { authenticated: boolean; source: string; request?: RequestAudit | undefined },
  ): Promise<void>;
  /** Writes the summaries still owed. */
  close(): Promise<void>;
}

interface Window {
  start: number;
  written: number;
  suppressed: number;
  outcomes: Partial<Record<Outcome, number>>;
  reasons: Record<string, number>;
}

const MINUTE = 60_000;

/**
 * A request without a valid token costs the caller nothing, so it must not cost the log much either:
 * per source address, the first `perSourcePerMinute` unauthenticated refusals of a minute get an event
 * each; the rest of that minute are counted and written as one summary event (method `http`, the
 * count, the outcomes and reasons) when the minute is over. Authenticated refusals are always written
 * one by one: the token names who sent them.
 */
export function createRefusalLog(
  audit: AuditWriter,
  server: string,
  logger: Logger,
  options: { perSourcePerMinute?: number; maxSources?: number } = {},
): RefusalLog {
  const limit = options.perSourcePerMinute ?? 20;
  const maxSources = options.maxSources ?? 10_000;
  const windows = new Map<string, Window>();

  const summarise = (source: string, w: Window): Promise<void> => {
    if (w.suppressed === 0) return Promise.resolve();
    const top = (Object.entries(w.outcomes) as [Outcome, number][]).sort((a, b) => b[1] - a[1])[0]![0];
    // The summary stands for many requests: its request id names the source and the minute.
    const owner = createEventOwner({
      server,
      requestId: `summary:${source}:${new Date(w.start).toISOString()}`,
    });
    return audit
      .keep(
        owner.event({
          method: 'http',
          outcome: top,
          durationMs: 0,
          resultSummary: {
            source,
            window_start: new Date(w.start).toISOString(),
            suppressed: w.suppressed,
            outcomes: w.outcomes,
            reasons: w.reasons,
          },
        }),
      )
      .then(
        () => {},
        (err: unknown) => logger.error({ err }, 'refusal summary could not be written'),
      );
  };

  const sweep = (now: number): Promise<void>[] => {
    const owed: Promise<void>[] = [];
    for (const [source, w] of windows) {
      if (now - w.start < MINUTE) continue;
      windows.delete(source);
      owed.push(summarise(source, w));
    }
    return owed;
  };
  const timer = setInterval(() => void Promise.all(sweep(Date.now())), 5_000);
  timer.unref();

  return {
    async record(event, { authenticated, source, request }) {
      if (!authenticated) {
        const now = Date.now();
        let w = windows.get(source);
        if (w && now - w.start >= MINUTE) {
          windows.delete(source);
          void summarise(source, w);
          w = undefined;
        }
        if (!w) {
          if (windows.size >= maxSources) await Promise.all(sweep(now));
          w = { start: now, written: 0, suppressed: 0, outcomes: {}, reasons: {} };
          windows.set(source, w);
        }
        if (w.written >= limit) {
          w.suppressed++;
          w.outcomes[event.outcome] = (w.outcomes[event.outcome] ?? 0) + 1;
          const reason = String(
            (event.resultSummary as { reason?: unknown } | undefined)?.reason ?? 'unknown',
          );
          w.reasons[reason] = (w.reasons[reason] ?? 0) + 1;
          request?.waive();
          return;
        }
        w.written++;
      }
      await (request ? request.settle(() => event) : audit.keep(event));
    },
    async close() {
      clearInterval(timer);
      await Promise.all(sweep(Number.POSITIVE_INFINITY));
    },
  };
}
