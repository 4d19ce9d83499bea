import { createServer } from '@bulkhead/core';
import { tools } from './tools/index.ts';

/** Engineering knowledge — ADRs, runbooks, guides, API references — read-only. */
export const devKnowledgeServer = createServer({
  name: 'dev-knowledge',
  version: '0.1.0',
  title: 'Engineering knowledge',
  description: 'Read-only search over the engineering team’s ADRs, runbooks, guides and API references.',
  icons: [
    {
      src: 'data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAyNCAyNCI+PHBhdGggZD0iTTQgNGgxMnYxNkg0eiIgZmlsbD0iIzNiNmVhNSIvPjwvc3ZnPg==',
      mimeType: 'image/svg+xml',
      sizes: ['any'],
    },
  ],
  tools,
  toolsBudgetChars: 6000,
});
