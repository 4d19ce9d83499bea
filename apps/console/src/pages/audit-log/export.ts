import { exportHeader, exportLine, readBatch, type AuditFilter, type ExportFormat } from '@bulkhead/audit';
import type { ConsoleContext } from '../../context.ts';
import { asOperator } from '../../operator/read.ts';

/** Events read per transaction: each batch is its own short transaction, never one held for the export. */
const BATCH = 1000;

const CONTENT_TYPES: Record<ExportFormat, string> = {
  jsonl: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
};

/** The answer's headers: the format's type, and a file to save, named by the search's start. */
export function exportHeaders(format: ExportFormat, from: Date): Record<string, string> {
  const stamp = from.toISOString().replace(/[-:]|\.\d+/g, '');
  return {
    'Content-Type': CONTENT_TYPES[format],
    'Content-Disposition': `attachment; filename="bulkhead-audit-${stamp}.${format}"`,
  };
}

/**
 * The events `filter` matches, in sequence order, in exactly the format of `bulkhead audit export`,
 * read a batch at a time as the client takes them, each batch in a transaction of its own that names
 * the operator. An operator whose right ends mid-export gets a broken download, not a log that
 * silently holds only the events of approvals (all the console's role may read otherwise).
 */
export function exportStream(
  ctx: ConsoleContext,
  operator: { proof: string; tokenId: string },
  filter: AuditFilter,
  format: ExportFormat,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let after = 0;
  let started = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const batch = await asOperator(ctx.sql, operator.proof, async (tx) => {
            const [reading] = await tx<{ ok: boolean }[]>`select bulkhead_reading_as_operator() as ok`;
            if (!reading!.ok)
              throw new Error(`token ${operator.tokenId} may no longer read the whole audit log`);
            return readBatch(tx, { ...filter, afterSeq: after }, BATCH);
          });
          const head = started ? '' : exportHeader(format);
          started = true;
          controller.enqueue(encoder.encode(head + batch.map((e) => exportLine(e, format)).join('')));
          if (batch.length < BATCH) controller.close();
          else after = batch[batch.length - 1]!.seq;
        } catch (err) {
          ctx.logger.error({ err, operator: operator.tokenId }, 'audit export failed');
          controller.error(err);
        }
      },
    },
    // One batch ahead at most: the log is never read faster than the client takes it.
    { highWaterMark: 1 },
  );
}
