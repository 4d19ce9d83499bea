import {
  defineTool,
  quoted, // eslint-disable-line @typescript-eslint/no-unused-vars -- @if textArgs: the preview quotes free text
  svgIcon,
  upstreamEffect,
} from '@bulkhead/core';
import { z } from 'zod';
import {
  __ANNOTATIONS__,
  __GATED_METHOD__,
  __INPUT__,
  __JSON__,
  __PARAMS__,
  __PREVIEW__,
  __QUERY__,
} from '../stand-ins.ts';

// Drafted by `bulkhead new server --from-openapi` from __OPERATION__. Sharpen the
// description for the model and check the arguments__BODY_NOTE__.

export const __TOOL__ = defineTool({
  name: '__TOOL_NAME__',
  title: '__TOOL_TITLE__',
  description: '__TOOL_DESCRIPTION__',
  scope: '__TOOL_SCOPE__',
  input: __INPUT__,
  output: z.object({ outbox_id: z.number() }),
  annotations: __ANNOTATIONS__,
  icons: svgIcon("<path d='M1 8l14-6-4 13-3-5z'/>"),
  timeoutMs: 10_000,
  approval: { preview: (__ARGS__) => __PREVIEW__ },
  handler: async (__ARGS__, ctx) => {
    // Runs once a person approved: the request is queued and sent after the commit, once.
    const id = await ctx.outbox!.enqueue(
      'upstream',
      upstreamEffect({
        upstream: '__UPSTREAM__',
        method: __GATED_METHOD__,
        path: '__PATH__',
        params: __PARAMS__, // @if params
        query: __QUERY__, // @if query
        json: __JSON__, // @if json
      }),
    );
    return { outbox_id: id };
  },
});
