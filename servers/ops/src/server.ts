import { createServer } from '@bulkhead/core';
import { tools } from './tools/index.ts';
import { icons } from './tools/shared.ts';

/** Prometheus Alertmanager for the operators: what fires, what is silenced; a new silence or its end waits for a person’s approval. */
export const opsServer = createServer({
  name: 'ops',
  version: '0.1.0',
  title: 'Alerts and silences',
  description:
    'Prometheus Alertmanager: the alerts firing now and the silences; creating or expiring a silence waits for a person’s approval.',
  icons: icons.alert,
  tools,
});
