import { defineTool, ToolError, untrusted, untrustedTextRef, READ_ONLY } from '@bulkhead/core';
import { z } from 'zod';
import {
  ALERTMANAGER,
  answer,
  fingerprintArg,
  labelText,
  type AmAlert,
  type AmGroup,
} from '../alertmanager.ts';
import { alertShape, alertView } from './list-alerts.ts';
import { icons } from './shared.ts';

export const getAlert = defineTool({
  name: 'get_alert',
  title: 'Get alert',
  description:
    'One alert by fingerprint (from list_alerts), whatever its state. Returns the alert as list_alerts does, plus ends_at, generator_url and groups (labels, receiver).',
  scope: 'ops:read',
  input: z.strictObject({ fingerprint: fingerprintArg.describe('e.g. 3f1c0a9b7e2d4c58.') }),
  output: alertShape.extend({
    ends_at: z.string(),
    generator_url: untrustedTextRef.nullable(),
    groups: z.array(z.object({ labels: untrustedTextRef, receiver: z.string() })),
  }),
  annotations: { ...READ_ONLY, openWorldHint: true },
  icons: icons.alert,
  timeoutMs: 10_000,
  handler: async ({ fingerprint }, ctx) => {
    const am = ctx.upstream(ALERTMANAGER);
    const alerts = answer<AmAlert[]>(await am.get('/api/v2/alerts'), 'the alert query');
    const alert = alerts.find((a) => a.fingerprint === fingerprint);
    if (!alert)
      throw new ToolError(
        `no alert with fingerprint ${fingerprint} in Alertmanager now (a resolved alert disappears) — list_alerts lists the current ones`,
      );
    const groups = answer<AmGroup[]>(await am.get('/api/v2/alerts/groups'), 'the group query');
    return {
      ...alertView(alert),
      ends_at: alert.endsAt,
      generator_url: alert.generatorURL
        ? untrusted(alert.generatorURL, { source: `alert ${fingerprint} generator URL` })
        : null,
      groups: groups
        .filter((g) => g.alerts.some((a) => a.fingerprint === fingerprint))
        .map((g, i) => ({
          labels: labelText(g.labels, `alert ${fingerprint} group ${i + 1} labels`),
          receiver: g.receiver.name,
        })),
    };
  },
});
