import { PENDING_NOTE } from '@bulkhead/core/operator';
import { callFlat, testApprover } from '@bulkhead/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { __EXAMPLE_ANSWER__, __EXAMPLE_ARGS__, __SENT_BODY__, __STATUS__ } from '../stand-ins.ts';
import { startHarness, type Harness } from '../test-client.ts';

// __OPERATION__, against a local stub of __UPSTREAM_TITLE__:
// a real HTTP server on 127.0.0.1 that answers this operation with an example built from the
// document's response schema.

const ARGS = __EXAMPLE_ARGS__;
const ANSWER = __EXAMPLE_ANSWER__;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ method: '__METHOD__', path: '__SENT_PATH__', status: __STATUS__, body: ANSWER });
});
afterAll(async () => {
  await h.close();
});

describe('__TOOL_NAME__', () => {
  let approvalId = '';

  it('files a request for approval and sends nothing to __UPSTREAM_TITLE_IN_TEST__ before a person approves', async () => {
    const result = await callFlat(h.client, '__TOOL_NAME__', ARGS);
    approvalId = String(result.structured?.approval_id);
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
    const [event] = await h.db
      .sql`select outcome, approval_id from audit_events where tool = '__TOOL_NAME__'`;
    expect(event).toEqual({ outcome: 'pending_approval', approval_id: approvalId });
    expect(h.received).toEqual([]);
  });

  it('sends the request once a person approves, with a random idempotency key from the outbox', async () => {
    await (await testApprover(h.db)).decide(approvalId, 'approve');
    await h.executor.drain();
    expect(h.received).toEqual([
      {
        method: '__METHOD__',
        url: '__SENT_URL__',
        json: __SENT_BODY__,
        key: expect.stringMatching(/^bulkhead-outbox-[0-9a-f]{32}$/),
      },
    ]);
  });
});
