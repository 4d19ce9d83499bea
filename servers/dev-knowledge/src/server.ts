import { createServer, svgIcon } from '@bulkhead/core';
import { tools } from './tools/index.ts';

/** Engineering knowledge — ADRs, runbooks, guides, API references — read-only. */
export const devKnowledgeServer = createServer({
  name: 'dev-knowledge',
  version: '0.1.0',
  title: 'Engineering knowledge',
  description: 'Read-only search over the engineering team’s ADRs, runbooks, guides and API references.',
  icons: svgIcon("<path d='M4 4h12v16H4z' fill='#3b6ea5'/>", 24),
  tools,
});
