import { PENDING_NOTE } from '@bulkhead/core/operator';
import { callFlat } from '@bulkhead/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { __EXAMPLE_ARGS__ } from '../stand-ins.ts';
import { lastEvent, startHarness, type Harness } from '../test-client.ts';

// __UPSTREAM_TOOL__ of the upstream MCP server, which it does not mark read-only: gated. The test calls
// it through this server with a real MCP client over HTTP and sees the request wait for a person.
// It approves nothing: an approved call would run on the real upstream, with the arguments below.

const TOOL = '__TOOL_NAME__';
/** Made from the pinned input schema. */
const ARGS = __EXAMPLE_ARGS__;

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 60_000);
afterAll(async () => {
  await h.close();
});

describe(TOOL, () => {
  it('files a request for approval and sends nothing to the upstream before a person approves', async () => {
    const result = await callFlat(h.client, TOOL, ARGS);
    const approvalId = String(result.structured?.approval_id);
    expect([result.isError, result.structured]).toEqual([
      false,
      {
        status: 'pending_approval',
        approval_id: expect.stringMatching(/^ap_/),
        preview: {
          text: '__PREVIEW_TEXT__',
          source: `approval ${approvalId} preview`,
          untrusted: true,
        },
        expires_at: expect.any(String),
        note: PENDING_NOTE,
      },
    ]);
    const event = await lastEvent(h.db, TOOL);
    expect([event.outcome, event.result_summary?.upstream]).toEqual(['pending_approval', undefined]);
  });
});
