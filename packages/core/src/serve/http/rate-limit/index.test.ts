import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { addNumbersServer, issueTestToken, startTestServer } from '../../../testing/index.ts';

// The per-token rate limit: one unit a request before the body is read, then one more for every
// further message of a 2025-03-26 batch; past the limit, 429 with Retry-After, audited.

const def = addNumbersServer('rate-limit-test', 'A server for the rate limit guards.');

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const call = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'add_numbers', arguments: { a: 1, b: 2 } },
});
/** The answers of a JSON or event-stream response. */
async function answers(res: Response): Promise<{ id: number }[]> {
  const text = await res.text();
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) return [JSON.parse(text)].flat();
  return text
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .flatMap((l) => JSON.parse(l.slice(6)) as { id: number }[]);
}

it('answers 429 with Retry-After past the per-token limit and audits it', async () => {
  const limited = await startTestServer(def, { db, rateLimitPerMinute: 3 });
  const own = await issueTestToken(db.sql, def, { label: 'limited' });
  const statuses: number[] = [];
  let retryAfter: string | null = null;
  // Stay inside one one-minute window.
  const second = new Date().getSeconds();
  if (second > 55) await new Promise((r) => setTimeout(r, (61 - second) * 1000));
  for (let i = 0; i < 4; i++) {
    const res = await fetch(limited.url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${own}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/list', params: {} }),
    });
    statuses.push(res.status);
    if (res.status === 429) retryAfter = res.headers.get('retry-after');
  }
  await limited.close();
  expect(statuses.map((s) => s === 429)).toEqual([false, false, false, true]);
  expect(Number(retryAfter)).toBeGreaterThan(0);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
  const [row] = await db.sql`select outcome, token_label from audit_events where outcome = 'rate_limited'`;
  expect(row).toEqual({ outcome: 'rate_limited', token_label: 'limited' });
}, 15_000);

it('a batch of 20 takes 20 of a 30-a-minute limit; the next batch of 20 is 429', async () => {
  const server = await startTestServer(def, { db, rateLimitPerMinute: 30 });
  const token = await issueTestToken(db.sql, def, { label: 'batch sender' });
  const post = (body: unknown) =>
    fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': '2025-03-26',
      },
      body: JSON.stringify(body),
    });
  const batch = (from: number) => Array.from({ length: 20 }, (_, i) => call(from + i));
  const first = await post(batch(1));
  expect(first.status).toBe(200);
  expect(await answers(first)).toHaveLength(20);
  const second = await post(batch(21));
  expect(second.status).toBe(429);
  expect(await second.json()).toMatchObject({ error: 'rate_limited' });
  // Ten units are left: single calls still go through.
  expect((await post(call(41))).status).toBe(200);
  const [refused] = await db.sql<{ summary: Record<string, unknown> }[]>`
    select result_summary as summary from audit_events
    where token_label = 'batch sender' and outcome = 'rate_limited'`;
  expect(refused!.summary).toEqual({ status: 429, reason: 'rate', batch: 20 });
});
