import { setTimeout as sleep } from 'node:timers/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import nodemailer from 'nodemailer';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createServer, defineTool } from '../index.ts';
import { issueTestToken, startTestServer, testApprover, type TestServer } from '../testing/index.ts';
import { startApprovalExecutor } from './index.ts';
import { startApprovalMailCatcher, type MailCatcher } from './mail-catcher.ts';
import { APPROVAL_HEADER, OUTBOX_HEADER } from './smtp.ts';

// Issue 43: the catcher of `pnpm start` took SMTP from any local process and trusted its headers, so
// the console's Sent mail page could show a mail no approval sent.

const def = createServer({
  name: 'catcher-test',
  version: '1.0.0',
  description: 'A gated server that sends one e-mail.',
  tools: [
    defineTool({
      name: 'send_note',
      title: 'Send note',
      description: 'Sends a note.',
      scope: 'notes:write',
      input: z.object({ text: z.string().min(1).max(100) }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
      approval: { preview: ({ text }) => `Send the note "${text}".` },
      handler: async ({ text }, ctx) => {
        await ctx.outbox!.enqueue('email', { to: 'ana@example.test', subject: text });
        return { sent: true };
      },
    }),
  ],
});

let db: TestDatabase;
let server: TestServer;
let catcher: MailCatcher;

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startTestServer(def, { db });
  catcher = await startApprovalMailCatcher(db.sql);
});
afterAll(async () => {
  await server.close();
  await catcher.close();
  await db.drop();
});

async function caught(): Promise<{ subject: string; approval_id: string; outbox_id: string }[]> {
  return db.sql`select subject, approval_id, outbox_id::text from bulkhead_caught_mail order by id`;
}

/** Sends one e-mail to the catcher as any local process could, with or without its password. */
function send(withPassword: boolean, headers: Record<string, string>, subject: string) {
  const url = new URL(catcher.url);
  return nodemailer
    .createTransport({
      host: url.hostname,
      port: Number(url.port),
      secure: false,
      ignoreTLS: true,
      ...(withPassword
        ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } }
        : {}),
    })
    .sendMail({ from: 'x@example.test', to: 'ana@example.test', subject, text: 'forged', headers });
}

describe('the mail catcher of pnpm start', () => {
  it('takes mail only with the password made at its start, and keeps only what an approval’s outbox sent', async () => {
    expect(catcher.url).toMatch(/^smtp:\/\/bulkhead:[A-Za-z0-9_-]{32}@127\.0\.0\.1:\d+$/);
    const approver = await testApprover(db, 'ana');
    const token = await issueTestToken(db.sql, def, { label: 'client' });
    const executor = startApprovalExecutor(def, {
      sql: server.sql,
      logger: pino({ level: 'silent' }),
      sweepIntervalMs: 60_000,
      instanceId: 'catcher-test',
      smtp: { url: catcher.url, from: 'notes@bulkhead.test' },
    });
    await executor.ready;
    const client = new Client(
      { name: 'catcher-test', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(server.url, {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    const filed = await client.callTool({ name: 'send_note', arguments: { text: 'the real one' } });
    await client.close();
    const id = (filed.structuredContent as { approval_id: string }).approval_id;
    await approver.decide(id, 'approve');
    while ((await caught()).length === 0) await sleep(50);
    await executor.stop();
    const [real] = await caught();
    const [row] = await db.sql<
      { id: string }[]
    >`select id::text from bulkhead_outbox where approval_id = ${id}`;
    expect(real).toEqual({ subject: 'the real one', approval_id: id, outbox_id: row!.id });

    // Without the password: refused before any message.
    await expect(
      send(false, { [APPROVAL_HEADER]: id, [OUTBOX_HEADER]: row!.id }, 'no password'),
    ).rejects.toThrow(/authentication required|530/i);
    // With it (a sender that has it), but naming an approval and an outbox row that do not belong together,
    // or none: accepted by SMTP, and not kept.
    const before = catcher.mails.length;
    await send(true, { [APPROVAL_HEADER]: id, [OUTBOX_HEADER]: String(Number(row!.id) + 1000) }, 'wrong row');
    await send(true, { [APPROVAL_HEADER]: 'ap_nosuchapproval', [OUTBOX_HEADER]: row!.id }, 'wrong approval');
    await send(true, {}, 'no headers');
    expect(catcher.mails.length).toBe(before + 3);
    expect((await caught()).map((m) => m.subject)).toEqual(['the real one']);
  });
});
