/** @jsxImportSource hono/jsx */
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv, ConsoleRequest } from '../../context.ts';
import { field } from '../../form-field.ts';
import { page } from '../../layout/layout.tsx';
import { auditOperator } from '../../operator/audit.ts';
import { acceptDrift, driftRecords, type DriftKey } from './drift.ts';
import { driftHref, DriftPage, PinsPage } from './page.tsx';

const ACCEPTED =
  'Accepted: every replica of the server serves the tool with the new definition within a second.';

/** `POST /operator/pins/accept`: one drifted definition accepted, audited whatever comes of it. */
async function acceptFromForm(c: ConsoleRequest, ctx: ConsoleContext) {
  const started = performance.now();
  const approver = c.get('approver');
  const form = await c.req.parseBody();
  const key: DriftKey = {
    server: field(form, 'server') ?? '',
    upstream: field(form, 'upstream') ?? '',
    tool: field(form, 'tool') ?? '',
    sha256: field(form, 'sha256') ?? '',
  };
  const drift = (await driftRecords(ctx.sql, approver.proof)).find(
    (d) =>
      d.server === key.server &&
      d.upstream === key.upstream &&
      d.tool === key.tool &&
      d.sha256 === key.sha256,
  );
  if (!drift) {
    await auditOperator(c, ctx, {
      action: 'accept_drift',
      outcome: 'invalid_arguments',
      started,
      arguments: { ...key },
    });
    return c.text('No such drift.', 404);
  }
  try {
    const changed = await acceptDrift(ctx.sql, approver.proof, key);
    await auditOperator(c, ctx, {
      action: 'accept_drift',
      outcome: 'ok',
      started,
      arguments: { ...key },
      summary: { changed },
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== '23514' && code !== '42501') throw err;
    await auditOperator(c, ctx, {
      action: 'accept_drift',
      outcome: code === '23514' ? 'invalid_arguments' : 'forbidden',
      started,
      arguments: { ...key },
      summary: { reason: (err as Error).message },
    });
    return page(c, <DriftPage approver={approver} drift={drift} error={(err as Error).message} />, 400);
  }
  return c.redirect(`${driftHref(key)}?done=accepted`, 303);
}

/** The pins (operators only): every drift of an upstream from its pins, each side by side, and Accept. */
export function mountPins(app: Hono<ConsoleEnv>, ctx: ConsoleContext) {
  app.get('/operator/pins', async (c) =>
    page(
      c,
      <PinsPage approver={c.get('approver')} drifts={await driftRecords(ctx.sql, c.get('approver').proof)} />,
    ),
  );
  app.get('/operator/pins/:server/:upstream/:tool/:sha256', async (c) => {
    const { server, upstream, tool, sha256 } = c.req.param();
    const drift = (await driftRecords(ctx.sql, c.get('approver').proof)).find(
      (d) => d.server === server && d.upstream === upstream && d.tool === tool && d.sha256 === sha256,
    );
    if (!drift) return c.text('No such drift.', 404);
    const done = c.req.query('done') === 'accepted';
    return page(
      c,
      <DriftPage approver={c.get('approver')} drift={drift} notice={done ? ACCEPTED : undefined} />,
    );
  });
  app.post('/operator/pins/accept', (c) => acceptFromForm(c, ctx));
}
