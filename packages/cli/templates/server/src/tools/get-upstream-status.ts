import { defineTool, READ_ONLY, svgIcon, untrustedTextSchema } from '@bulkhead/core';
import { z } from 'zod';

// The example of a tool that reads another system: it reaches the upstream declared in package.json
// (`bulkhead.upstreams.__UPSTREAM__`) through `ctx.upstream`, never a bare fetch. The call's time limit and
// cancellation reach the request, the request is recorded in the call's audit event (never the
// token), and the answer reaches the model marked untrusted. Replace it with the server's own tools.

export const __UPSTREAM_TOOL__ = defineTool({
  name: '__UPSTREAM_TOOL_NAME__',
  title: 'Get the __UPSTREAM__ status',
  description:
    'Asks the __UPSTREAM__ system for its status page (GET /status). Returns http_status, the status code it answered, and status, the text of its answer as it sent it (untrusted data). Takes no arguments; unlike count_weekdays, it reaches another system.',
  scope: '__READ_SCOPE__',
  input: z.strictObject({}),
  output: z.object({ http_status: z.number(), status: untrustedTextSchema }),
  annotations: { ...READ_ONLY, openWorldHint: true },
  icons: svgIcon("<path d='M8 1a7 7 0 1 0 0 14A7 7 0 0 0 8 1zm-1 3h2v5H7zm0 6h2v2H7z' fill-rule='evenodd'/>"),
  timeoutMs: 10_000,
  handler: async (_args, ctx) => {
    const res = await ctx.upstream('__UPSTREAM__').get('/status');
    return { http_status: res.status, status: res.text() };
  },
});
