import { defineTool, limitArg, untrusted, untrustedTextRef, READ_ONLY } from '@bulkhead/core';
import { z } from 'zod';
import {
  ALERTMANAGER,
  alertState,
  annotationText,
  answer,
  checkRegexes,
  labelText,
  matcherArg,
  sortAlerts,
  filterQuery,
  type AmAlert,
} from '../alertmanager.ts';
import { icons } from './shared.ts';

/** One alert in short form, as list_alerts and get_alert show it. */
export const alertShape = z.object({
  fingerprint: z.string(),
  alertname: untrustedTextRef,
  state: z.enum(['active', 'silenced', 'inhibited', 'unprocessed']),
  labels: untrustedTextRef,
  annotations: untrustedTextRef,
  starts_at: z.string(),
  receivers: z.array(z.string()),
  silenced_by: z.array(z.string()),
  inhibited_by: z.array(z.string()),
});

/** An alert of Alertmanager's as the model reads it: its labels and annotations untrusted (alert sources write them). */
export function alertView(alert: AmAlert): z.output<typeof alertShape> {
  const at = `alert ${alert.fingerprint}`;
  return {
    fingerprint: alert.fingerprint,
    alertname: untrusted(alert.labels.alertname ?? '', { source: `${at} alertname` }),
    state: alertState(alert),
    labels: labelText(alert.labels, `${at} labels`),
    annotations: annotationText(alert.annotations, `${at} annotations`),
    starts_at: alert.startsAt,
    receivers: alert.receivers.map((r) => r.name),
    silenced_by: alert.status.silencedBy,
    inhibited_by: alert.status.inhibitedBy,
  };
}

export const listAlerts = defineTool({
  name: 'list_alerts',
  title: 'List alerts',
  description:
    'Alerts Alertmanager holds now, by name. matchers: label matchers, all must hold; only notifying alerts unless include_silenced or include_inhibited; ' +
    'receiver: regex on the receiver; limit. Returns alerts (fingerprint, alertname, state, labels, annotations, silenced_by), count, total, truncated. get_alert shows one with its groups.',
  scope: 'ops:read',
  input: z.strictObject({
    matchers: z
      .array(matcherArg)
      .max(10)
      .optional()
      .describe('e.g. [{"label":"severity","op":"=","value":"page"}].'),
    include_silenced: z.boolean().default(false).describe('Default false.'),
    include_inhibited: z.boolean().default(false).describe('Default false.'),
    receiver: z.string().max(100).optional().describe('e.g. team-.*.'),
    limit: limitArg(20, 100),
  }),
  output: z.object({
    alerts: z.array(alertShape),
    count: z.number(),
    total: z.number(),
    truncated: z.boolean(),
  }),
  annotations: { ...READ_ONLY, openWorldHint: true },
  icons: icons.alerts,
  timeoutMs: 10_000,
  handler: async ({ matchers = [], include_silenced, include_inhibited, receiver, limit }, ctx) => {
    checkRegexes(matchers);
    const res = await ctx.upstream(ALERTMANAGER).get('/api/v2/alerts', {
      query: {
        ...filterQuery(matchers),
        active: true,
        silenced: include_silenced,
        inhibited: include_inhibited,
        receiver,
      },
    });
    const all = sortAlerts(answer<AmAlert[]>(res, 'the alert query'));
    const alerts = all.slice(0, limit).map(alertView);
    return { alerts, count: alerts.length, total: all.length, truncated: alerts.length < all.length };
  },
});
