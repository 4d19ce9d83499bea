import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createServer, defineTool } from '../../index.ts';
import { createProgressChannel, PROGRESS_INTERVAL_MS, type ProgressUpdate } from './progress.ts';
import {
  connectTestClient,
  issueTestToken,
  rawRequest,
  startTestServer,
  type TestServer,
} from '../../testing/index.ts';

describe('the progress channel', () => {
  /** A channel on a clock the test moves; what it sends lands in `sent`. */
  function channel() {
    let now = 0;
    const sent: ProgressUpdate[] = [];
    const c = createProgressChannel(async (u) => void sent.push(u), { now: () => now });
    return { c, sent, tick: (ms: number) => (now += ms) };
  }

  it('sends the first report at once and holds back the rest of an interval, the newest winning', async () => {
    const { c, sent, tick } = channel();
    c.report(1, 10, 'one');
    c.report(2, 10, 'two');
    c.report(3, 10, 'three');
    tick(100);
    c.report(4, 10, 'four');
    tick(PROGRESS_INTERVAL_MS);
    c.report(5, 10, 'five');
    await c.finish(false);
    expect(sent).toEqual([
      { progress: 1, total: 10, message: 'one' },
      { progress: 5, total: 10, message: 'five' },
    ]);
  });

  it('drops what does not go forward, and bad numbers; bounds the message', async () => {
    const { c, sent, tick } = channel();
    c.report(5);
    tick(1000);
    c.report(5);
    c.report(4);
    c.report(Number.NaN);
    c.report(-1);
    c.report(6, 3, `  ${'x'.repeat(300)}  `);
    await c.finish(false);
    expect(sent).toEqual([{ progress: 5 }, { progress: 6, message: 'x'.repeat(200) }]);
  });

  it('ends a completed call with a final notification at the total; an unfinished one without', async () => {
    const done = channel();
    done.c.report(1, 4, 'first of four');
    done.c.report(2, 4, 'second of four');
    await done.c.finish(true);
    expect(done.sent).toEqual([
      { progress: 1, total: 4, message: 'first of four' },
      { progress: 4, total: 4 },
    ]);
    const failed = channel();
    failed.c.report(1, 4);
    failed.c.report(2, 4);
    await failed.c.finish(false);
    expect(failed.sent.map((u) => u.progress)).toEqual([1, 2]);
    const silent = channel();
    await silent.c.finish(true);
    expect(silent.sent).toEqual([]);
    const last = channel();
    last.c.report(4, 4, 'all four');
    await last.c.finish(true);
    expect(last.sent).toEqual([{ progress: 4, total: 4, message: 'all four' }]);
  });

  it('never fails the call: a send that throws is dropped', async () => {
    const c = createProgressChannel(async () => {
      throw new Error('client went away');
    });
    c.report(1, 2);
    await expect(c.finish(true)).resolves.toBeUndefined();
  });
});

const def = createServer({
  name: 'progress-test',
  version: '1.0.0',
  description: 'A server whose tool reports progress.',
  tools: [
    defineTool({
      name: 'count_up',
      title: 'Count up',
      description: 'Counts to n, reporting every step.',
      scope: 'count:read',
      input: z.object({ n: z.number().int().min(1).max(5000), fail: z.boolean().default(false) }),
      output: z.object({ counted: z.number() }),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      handler: async ({ n, fail }, ctx) => {
        // A chatty handler: a report per step, a step every millisecond or so.
        for (let i = 1; i <= n; i++) {
          if (fail && i > n / 2) throw new Error('boom');
          ctx.progress(i, n, `counted ${i} of ${n}`);
          if (i % 10 === 0) await sleep(10);
        }
        return { counted: n };
      },
    }),
  ],
});

let db: TestDatabase;
let server: TestServer;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startTestServer(def, { db });
  token = await issueTestToken(db.sql, def);
});
afterAll(async () => {
  await server.close();
  await db.drop();
});

describe('progress notifications over HTTP', () => {
  it('arrive in order, at most four a second, with a final one at completion before the result (2026-07-28)', async () => {
    const client = await connectTestClient(server.url, token);
    const seen: { progress: number; total?: number; message?: string; at: number }[] = [];
    const started = performance.now();
    const result = await client.callTool(
      { name: 'count_up', arguments: { n: 1500 } },
      { onprogress: (p) => seen.push({ ...p, at: performance.now() }) },
    );
    const took = performance.now() - started;
    await client.close();
    expect(result.structuredContent).toEqual({ counted: 1500 });
    expect(seen.length).toBeGreaterThanOrEqual(3);
    // At most one per interval, plus the final one, over the whole call.
    expect(seen.length).toBeLessThanOrEqual(Math.ceil(took / PROGRESS_INTERVAL_MS) + 2);
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress);
    expect(seen[0]).toMatchObject({ progress: 1, total: 1500, message: 'counted 1 of 1500' });
    expect(seen.at(-1)).toMatchObject({ progress: 1500, total: 1500 });
    // Each held-back report is the newest of its interval: every one sent is a real step of the count.
    for (const p of seen)
      expect(p.message ?? `counted ${p.progress} of 1500`).toBe(`counted ${p.progress} of 1500`);
  });

  it('the same on the 2025-11-25 wire; nothing without a progress token; no final one for a failed call', async () => {
    const legacy = await rawRequest(server.url, token, 'tools/call', {
      name: 'count_up',
      arguments: { n: 600 },
      _meta: { progressToken: 'count-600' },
    });
    const progress = legacy.notifications.filter((m) => m.method === 'notifications/progress');
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.every((m) => m.params.progressToken === 'count-600')).toBe(true);
    expect(progress.at(-1)!.params).toEqual({
      progressToken: 'count-600',
      progress: 600,
      total: 600,
      message: 'counted 600 of 600',
    });
    expect(legacy.result).toMatchObject({ structuredContent: { counted: 600 } });

    const quiet = await rawRequest(server.url, token, 'tools/call', {
      name: 'count_up',
      arguments: { n: 600 },
    });
    expect(quiet.notifications).toEqual([]);

    const failed = await rawRequest(server.url, token, 'tools/call', {
      name: 'count_up',
      arguments: { n: 600, fail: true },
      _meta: { progressToken: 7 },
    });
    expect(failed.result).toMatchObject({ isError: true });
    // What was held back still goes out; nothing claims the work was done.
    expect(failed.notifications.at(-1)!.params).toEqual({
      progressToken: 7,
      progress: 300,
      total: 600,
      message: 'counted 300 of 600',
    });
  });
});
