import { callFlat } from '@bulkhead/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { __EXAMPLE_ARGS__ } from '../stand-ins.ts';
import { lastEvent, startHarness, type Harness } from '../test-client.ts';

// __UPSTREAM_TOOL__ of the upstream MCP server, for real: the test starts or reaches the upstream as the
// manifest says (bulkhead.mcpUpstream in package.json) and calls the pinned tool through this server
// with a real MCP client over HTTP.

const TOOL = '__TOOL_NAME__';
/** Made from the pinned input schema; write arguments the upstream accepts here if it refuses these. */
const ARGS = __EXAMPLE_ARGS__;

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
}, 60_000);
afterAll(async () => {
  await h.close();
});

describe(TOOL, () => {
  it('is forwarded to the upstream at once, and what comes back is marked untrusted', async () => {
    const result = await callFlat(h.client, TOOL, ARGS);
    expect(result.isError).toBe(false);
    expect(result.text).toContain('source="upstream __UPSTREAM__, tool __UPSTREAM_TOOL__"');
  });

  it('is audited: its arguments, its outcome and the upstream it reached', async () => {
    const event = await lastEvent(h.db, TOOL);
    expect([event.arguments, event.outcome]).toEqual([ARGS, 'ok']);
    expect(event.result_summary?.upstream).toEqual([
      expect.objectContaining({ upstream: '__UPSTREAM__', method: 'tools/call', path: '__UPSTREAM_TOOL__' }),
    ]);
  });
});
