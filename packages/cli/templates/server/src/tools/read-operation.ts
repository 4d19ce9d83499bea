import { defineTool, READ_ONLY, svgIcon, ToolError } from '@bulkhead/core';
import { z } from 'zod';
import { __INPUT__, __REQUEST_OPTIONS__ } from '../stand-ins.ts';
import { untrustedData, upstreamData } from '../upstream-data.ts';

// Drafted by `bulkhead new server --from-openapi` from __OPERATION__. Sharpen the
// description for the model and check the arguments__BODY_NOTE__.

export const __TOOL__ = defineTool({
  name: '__TOOL_NAME__',
  title: '__TOOL_TITLE__',
  description: '__TOOL_DESCRIPTION__',
  scope: '__TOOL_SCOPE__',
  input: __INPUT__,
  output: z.object({ http_status: z.number(), data: upstreamData }),
  annotations: { ...READ_ONLY, openWorldHint: true },
  icons: svgIcon("<path d='M3 1h10v14H3zm2 4h6v1H5zm0 3h6v1H5z' fill-rule='evenodd'/>"),
  timeoutMs: 10_000,
  handler: async (__ARGS__, ctx) => {
    const res = await ctx.upstream('__UPSTREAM__').get('__PATH__', __REQUEST_OPTIONS__);
    if (!res.ok)
      throw new ToolError(
        `__UPSTREAM_TITLE_AT_START__ answered HTTP ${res.status} to __METHOD_AND_PATH__: check the arguments. Nothing was changed.`,
      );
    return { http_status: res.status, data: untrustedData(res, '__DATA_SOURCE__') };
  },
});
