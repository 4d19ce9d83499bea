// Not a template: the generator writes src/server.ts from ../server/src/server.ts. This one lets the
// templates beside it type-check.
import { createServer } from '@bulkhead/core';
import { tools } from './tools/index.ts';

export const __SERVER__ = createServer({
  name: 'template',
  version: '0.1.0',
  description: 'The templates of a server in front of an MCP server.',
  tools,
});
