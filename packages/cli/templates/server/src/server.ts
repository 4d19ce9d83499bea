import { createServer } from '@bulkhead/core';
import { tools } from './tools/index.ts';

/** __SERVER_DOC__ */
export const __SERVER__ = createServer({
  name: '__SERVER_NAME__',
  version: '0.1.0',
  title: '__SERVER_TITLE__',
  description: '__SERVER_DESCRIPTION__',
  tools,
});
