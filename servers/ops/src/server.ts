import { createServer, svgIcon } from '@bulkhead/core';
import { tools } from './tools/index.ts';

/** Prometheus Alertmanager for the operators: what fires, what is silenced; a new silence or its end waits for a person’s approval. */
export const opsServer = createServer({
  name: 'ops',
  version: '0.1.0',
  title: 'Alerts and silences',
  description:
    'Prometheus Alertmanager: the alerts firing now and the silences; creating or expiring a silence waits for a person’s approval.',
  // A bell; the tools carry none (clients show the server's icon beside its tools).
  icons: svgIcon("<path d='M8 1a4 4 0 0 0-4 4v4l-2 3h12l-2-3V5a4 4 0 0 0-4-4zm-2 12a2 2 0 0 0 4 0z'/>"),
  tools,
});
