import { startAlertmanager } from '../fixtures/alertmanager.ts';

/**
 * What ops reaches, for the cross-server tests (test/upstreams.ts finds this file by the manifest's
 * `bulkhead.upstreams`): a real Alertmanager with one alert, so that the probe (list_alerts) lists it.
 */
export async function startTestUpstreams(): Promise<{ env: Record<string, string>; close(): Promise<void> }> {
  const am = await startAlertmanager();
  await am.postAlerts([{ labels: { alertname: 'ProbeAlert', severity: 'info' } }]);
  return { env: { BULKHEAD_OPS_ALERTMANAGER_URL: am.url }, close: am.close };
}
