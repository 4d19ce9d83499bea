/** @jsxImportSource hono/jsx */
import { EXPORT_FORMATS, eventSealStatus, readEvent, readNewest } from '@bulkhead/audit';
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../../context.ts';
import { page } from '../../layout/layout.tsx';
import { MessagePage } from '../../layout/message-page.tsx';
import { auditOperator } from '../../operator/audit.ts';
import { asOperator } from '../../operator/read.ts';
import { countPending } from '../../sessions.ts';
import { AuditEventPage } from './event-page.tsx';
import { exportHeaders, exportStream } from './export.ts';
import { AuditLogPage } from './page.tsx';
import { parseSearch, searchFilter, searchQuery } from './search.ts';

/** Events a page. */
const PAGE = 50;

/**
 * The audit log (operators only): `/operator/audit` searches it a page at a time, newest first;
 * `/operator/audit/events/:seq` shows one event and its seal; `/operator/audit/export` streams what a
 * search finds as `bulkhead audit export` does, and is audited.
 */
export function mountAuditLog(app: Hono<ConsoleEnv>, ctx: ConsoleContext) {
  const { sql } = ctx;

  app.get('/operator/audit', async (c) => {
    const approver = c.get('approver');
    const { search, errors } = parseSearch(c.req.query());
    const [found, pending] = await Promise.all([
      errors.length
        ? []
        : asOperator(sql, approver.proof, async (tx) =>
            readNewest(tx, await searchFilter(tx, approver.proof, search), PAGE + 1),
          ),
      countPending(sql),
    ]);
    return page(
      c,
      <AuditLogPage
        approver={approver}
        pending={pending}
        search={search}
        errors={errors}
        events={found.slice(0, PAGE)}
        older={found.length > PAGE ? found[PAGE - 1]!.seq : undefined}
      />,
      errors.length ? 400 : 200,
    );
  });

  app.get('/operator/audit/events/:seq{[0-9]{1,15}}', async (c) => {
    const approver = c.get('approver');
    const seq = Number(c.req.param('seq'));
    const [shown, pending] = await Promise.all([
      asOperator(sql, approver.proof, async (tx) => {
        const event = await readEvent(tx, seq);
        const seal = event && (await eventSealStatus(tx, ctx.auditKey, seq));
        return event && seal ? { event, seal } : undefined;
      }),
      countPending(sql),
    ]);
    if (!shown)
      return page(
        c,
        <MessagePage
          title="No such event"
          message={`The audit log holds no event #${seq}.`}
          approver={approver}
        />,
        404,
      );
    return page(c, <AuditEventPage approver={approver} pending={pending} {...shown} />);
  });

  app.get('/operator/audit/export', async (c) => {
    const started = performance.now();
    const approver = c.get('approver');
    const { search, errors } = parseSearch(c.req.query());
    const format = EXPORT_FORMATS.find((f) => f === c.req.query('format'));
    if (!format) errors.push('Format: jsonl or csv.');
    if (errors.length || !format)
      return page(
        c,
        <MessagePage title="Export refused" message={errors.join(' ')} approver={approver} />,
        400,
      );
    const whole = { ...search, before: undefined };
    const filter = await asOperator(sql, approver.proof, (tx) => searchFilter(tx, approver.proof, whole));
    // Recorded before the first byte: no export leaves the console unaudited.
    await auditOperator(c, ctx, {
      action: 'audit_export',
      outcome: 'ok',
      started,
      arguments: { format, search: Object.fromEntries(new URLSearchParams(searchQuery(whole))) },
    });
    return c.body(exportStream(ctx, approver, filter, format), 200, exportHeaders(format, search.from));
  });
}
