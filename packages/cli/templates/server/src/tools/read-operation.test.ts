import { callFlat } from '@bulkhead/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { __ANSWER_BYTES__, __EXAMPLE_ANSWER__, __EXAMPLE_ARGS__, __STATUS__ } from '../stand-ins.ts';
import { marked, startHarness, type Harness } from '../test-client.ts';

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
  it('returns the answer of __UPSTREAM_TITLE_IN_TEST__, its texts marked untrusted', async () => {
    const result = await callFlat(h.client, '__TOOL_NAME__', ARGS);
    expect([result.isError, result.structured]).toEqual([
      false,
      { http_status: __STATUS__, data: marked(ANSWER, '__DATA_SOURCE__') },
    ]);
    expect(h.received.map((r) => [r.method, r.url])).toEqual([['GET', '__SENT_URL__']]);
  });

  it('is audited: its arguments, its outcome and the request it sent', async () => {
    const [event] = await h.db.sql<
      { arguments: unknown; outcome: string; result_summary: { upstream: unknown[] } }[]
    >`
      select arguments, outcome, result_summary from audit_events where tool = '__TOOL_NAME__' order by seq desc limit 1`;
    expect([event!.arguments, event!.outcome]).toEqual([ARGS, 'ok']);
    expect(event!.result_summary.upstream).toEqual([
      {
        upstream: '__UPSTREAM__',
        method: 'GET',
        path_template: '__PATH__',
        path: '__SENT_PATH__',
        attempt: 1,
        status: __STATUS__,
        bytes: __ANSWER_BYTES__,
        ms: expect.any(Number),
      },
    ]);
  });
});
