import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FIXTURE_EFFECTS_DDL, fixtureServer } from '../testing/fixtures/gated-server.ts';
import { startApprovalExecutor } from './index.ts';
import { issueTestToken, startTestServer } from '../testing/index.ts';

let db: TestDatabase;
const received: { headers: IncomingHttpHeaders; body: Record<string, unknown>; answered: number }[] = [];
const receiver = createHttpServer((req, res) => {
  let text = '';
  req.on('data', (chunk: Buffer) => (text += chunk.toString()));
  req.on('end', () => {
    // The first delivery fails, as a receiver that is briefly down would.
    const answered = received.length === 0 ? 503 : 200;
    received.push({ headers: req.headers, body: JSON.parse(text) as Record<string, unknown>, answered });
    res.writeHead(answered).end();
  });
});

beforeAll(async () => {
  db = await createTestDatabase();
  await db.as('gate-fixture');
  await db.sql.unsafe(FIXTURE_EFFECTS_DDL);
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve));
  await db.drop();
});

it('notifies the webhook, retries with backoff after a failure and records every attempt', async () => {
  const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const server = await startTestServer(fixtureServer, {
    db,
    logger,
    approvalWebhookUrl: webhookUrl,
    consoleUrl: 'https://approve.example.test/',
  });
  const executor = startApprovalExecutor(fixtureServer, {
    sql: server.sql,
    logger,
    webhookUrl,
    retry: { baseDelayMs: 300 },
  });
  await executor.ready;
  const token = await issueTestToken(db.sql, fixtureServer, { label: 'Claude Code (ops)' });
  const client = new Client(
    { name: 't', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(server.url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  const result = await client.callTool({ name: 'record_effect', arguments: { label: 'refund R-2026-0007' } });
  await client.close();
  const id = (result.structuredContent as { approval_id: string }).approval_id;

  const deadline = Date.now() + 5000;
  while (received.length < 2 && Date.now() < deadline) await sleep(50);
  await executor.drain();
  await executor.stop();
  await server.close();

  expect(received.map((r) => r.answered)).toEqual([503, 200]);
  const [first, second] = received;
  expect(first!.headers['idempotency-key']).toBe(second!.headers['idempotency-key']);
  expect(first!.headers['x-bulkhead-delivery-attempt']).toBe('1');
  expect(second!.headers['x-bulkhead-delivery-attempt']).toBe('2');
  expect(second!.body).toMatchObject({
    type: 'approval.requested',
    url: `https://approve.example.test/approvals/${id}`,
    approval: {
      id,
      server: 'gate-fixture',
      tool: 'record_effect',
      status: 'pending',
      preview: 'Record the effect "refund R-2026-0007".',
      arguments: { label: 'refund R-2026-0007', hold_ms: 0 },
      requested_by: 'Claude Code (ops)',
    },
  });
  expect(second!.body.text).toBe(
    `Approval needed on gate-fixture: Record the effect "refund R-2026-0007".\nRequested by Claude Code (ops) with record_effect; expires ${(second!.body.approval as { expires_at: string }).expires_at}.\n<https://approve.example.test/approvals/${id}|Review ${id} in the console>`,
  );

  const [row] = await db.sql<{ id: string; key: string; status: string; attempts: number }[]>`
    select id, idempotency_key as key, status, attempts from bulkhead_outbox where approval_id = ${id}`;
  expect(row).toMatchObject({ status: 'delivered', attempts: 2 });
  expect(row!.key).toMatch(/^bulkhead-outbox-[0-9a-f]{32}$/);
  expect(first!.headers['idempotency-key']).toBe(row!.key);
  const attempts = await db.sql<
    { attempt: number; ok: boolean; status_code: number; error: string | null; at: Date }[]
  >`
    select attempt, ok, status_code, error, at from bulkhead_outbox_attempts where outbox_id = ${row!.id} order by attempt`;
  expect(
    attempts.map(({ attempt, ok, status_code, error }) => ({ attempt, ok, status_code, error })),
  ).toEqual([
    { attempt: 1, ok: false, status_code: 503, error: 'webhook answered HTTP 503' },
    { attempt: 2, ok: true, status_code: 200, error: null },
  ]);
  expect(attempts[1]!.at.getTime() - attempts[0]!.at.getTime()).toBeGreaterThanOrEqual(250);

  const requested = lines.find(
    (l) => l.approvalId === id && l.msg === 'approval needed: Record the effect "refund R-2026-0007".',
  );
  expect(requested).toMatchObject({
    review: `https://approve.example.test/approvals/${id}`,
    requestedBy: 'Claude Code (ops)',
  });
  expect(lines.some((l) => l.msg === 'outbox delivery failed; will retry' && l.attempt === 1)).toBe(true);
});

it('escapes customer text in the Slack text, so that it cannot add a link or a mention', async () => {
  const server = await startTestServer(fixtureServer, {
    db,
    approvalWebhookUrl: 'http://127.0.0.1:9/never-called',
    consoleUrl: 'https://approve.example.test',
  });
  const token = await issueTestToken(db.sql, fixtureServer, { label: 'Bots & <Co>' });
  const client = new Client(
    { name: 't', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(server.url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  const label = 'refund <https://evil.example/x|Approve> & <!channel>';
  const result = await client.callTool({ name: 'record_effect', arguments: { label } });
  await client.close();
  await server.close();
  const id = (result.structuredContent as { approval_id: string }).approval_id;
  const [row] = await db.sql<{ payload: { text: string; approval: { preview: string } } }[]>`
    select payload from bulkhead_outbox where approval_id = ${id}`;
  const { text, approval } = row!.payload;
  expect(text.split('\n')[0]).toBe(
    'Approval needed on gate-fixture: Record the effect "refund &lt;https://evil.example/x|Approve&gt; &amp; &lt;!channel&gt;".',
  );
  expect(text.split('\n')[1]).toMatch(/^Requested by Bots &amp; &lt;Co&gt; with record_effect; expires /);
  expect(text.split('\n')[2]).toBe(
    `<https://approve.example.test/approvals/${id}|Review ${id} in the console>`,
  );
  // The only markup left is the console link; the JSON field keeps the preview as written.
  expect(text.match(/<[^>]*>/g)).toEqual([
    `<https://approve.example.test/approvals/${id}|Review ${id} in the console>`,
  ]);
  expect(approval.preview).toBe(`Record the effect "${label}".`);
});
