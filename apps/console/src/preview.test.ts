import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { createLogger, createServer, defineTool, secret } from '@bulkhead/core';
import { argumentsHash, getApproval, issueToken } from '@bulkhead/core/operator';
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createConsoleApp, type ConsoleApp } from './app.tsx';

const letters = createServer({
  name: 'letters',
  version: '1.0.0',
  description: 'A gated server for the console preview test.',
  tools: [
    defineTool({
      name: 'send_letter',
      title: 'Send letter',
      description: 'Sends a letter.',
      scope: 'letters:write',
      input: z.object({
        to: z.string(),
        subject: z.string().max(200),
        body: z.string().max(5000),
        pin: secret(z.string()),
      }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
      approval: {
        preview: ({ to, subject, body }) =>
          `Send "${subject}" to ${to}: "${body.slice(0, 80)}…" (${body.length} characters).`,
      },
      handler: async ({ to }) => ({ sent: to }),
    }),
  ],
});

const logger = createLogger({ level: 'silent' });
let db: TestDatabase;
let mcp: TestServer;
let mcpToken: string;
let bearer: Record<string, string>;
let consoleApp: ConsoleApp;
let http: ServerType;
let base: string;

beforeAll(async () => {
  db = await createTestDatabase();
  mcp = await startTestServer(letters, { db, logger });
  mcpToken = await issueTestToken(db.sql, letters, { label: 'Claude (letters)' });
  const { token } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Ana Berg',
    scopes: ['approvals:decide'],
    expiresAt: null,
    createdBy: 'test',
  });
  bearer = { Authorization: `Bearer ${token}` };
  consoleApp = createConsoleApp({ sql: (await db.as('console')).sql, logger, publicUrl: 'http://127.0.0.1' });
  http = serve({ fetch: consoleApp.app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise<void>((resolve) => http.once('listening', resolve));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => http.close(resolve));
  await consoleApp.close();
  await mcp.close();
  await db.drop();
});

/** A 5,000-character letter body whose last line says it is the end. */
const BODY = (() => {
  const line = 'We have received your payment of 42.00 EUR for invoice R-2026-0042. Thank you.\n';
  const end = 'This is the last line of the letter.';
  return line.repeat(Math.floor((5000 - end.length) / line.length)).padEnd(5000 - end.length, '.') + end;
})();
const TO = '\u0430nna@nordlicht.example'; // Cyrillic а, then Latin
const SUBJECT = 'Invoice \u202efdp.exe';

async function requestLetter(args: Record<string, string>): Promise<string> {
  const client = await connectTestClient(mcp.url, mcpToken, 'preview-test');
  const result = await client.callTool({ name: 'send_letter', arguments: args });
  await client.close();
  return (result.structuredContent as { approval_id: string }).approval_id;
}

async function html(path: string): Promise<string> {
  const res = await fetch(`${base}${path}`, { headers: bearer });
  expect(res.status).toBe(200);
  return res.text();
}

/** The text a person reads: tags dropped, entities decoded. */
function text(fragment: string): string {
  return fragment
    .replace(/<[^>]+>/g, '')
    .replace(
      /&(quot|amp|lt|gt|#39);/g,
      (_m, e: string) => ({ quot: '"', amp: '&', lt: '<', gt: '>', '#39': "'" })[e]!,
    );
}

/** The rendered value cell of one argument field. */
function field(page: string, name: string): string {
  const m = new RegExp(`<th scope="row"><code><bdi>${name}</bdi></code></th><td>(.*?)</td></tr>`, 's').exec(
    page,
  );
  expect(m, `field ${name}`).not.toBeNull();
  return m![1]!;
}

describe('what the console shows of a request', () => {
  let id: string;
  beforeAll(async () => {
    id = await requestLetter({ to: TO, subject: SUBJECT, body: BODY, pin: 'PIN-9Q7Z' });
  });

  it('shows the full text that will be sent, hidden characters as [U+202E], and flags a mixed-script address', async () => {
    expect(BODY).toHaveLength(5000);
    const page = await html(`/approvals/${id}`);
    expect(page).toContain(
      '<p class="preview"><bdi>Send &quot;Invoice <mark class="hidden">[U+202E]</mark>fdp.exe&quot; to ' +
        '<mark class="mixed"><span class="odd">\u0430</span>nna@nordlicht.example</mark>: &quot;We have received',
    );
    // The preview is one line: the body's line break in it is shown, not applied.
    expect(page).toContain(
      'Thank you.<mark class="hidden">[U+000A]</mark>W…&quot; (5000 characters).</bdi></p>',
    );
    expect(text(/<div class="warn" role="note">(.*?)<\/div>/s.exec(page)![1]!)).toBe(
      'Look closely: this request holds 3 hidden characters and 2 words mixing scripts, marked below, each with a note. What you read may not be what will run.',
    );

    const body = field(page, 'body');
    expect(text(/<div class="text">(.*?)<\/div>/s.exec(body)![1]!)).toBe(BODY);
    expect(body).toContain('<p class="hint">Text, 5,000 characters, in full.</p>');

    const to = field(page, 'to');
    expect(to).toContain(
      '<div class="text"><bdi><mark class="mixed"><span class="odd">\u0430</span>nna@nordlicht.example</mark></bdi></div>',
    );
    expect(text(to)).toContain(
      '“\u0430nna@nordlicht.example” mixes Latin and Cyrillic letters: \u0430 (U+0430) is Cyrillic. Letters of different scripts can look alike; this is not the Latin word it may look like.',
    );

    const subject = field(page, 'subject');
    expect(subject).toContain(
      '<div class="text"><bdi>Invoice <mark class="hidden">[U+202E]</mark>fdp.exe</bdi></div>',
    );
    expect(text(subject)).toContain(
      '[U+202E] is a hidden character — right-to-left override: reverses the text after it. Shown here, not applied.',
    );
    expect(page).not.toContain('\u202e');

    const stored = (await getApproval(db.sql, id))!;
    expect(field(page, 'pin')).toBe(
      `<span class="hint">secret value, not shown (<code>${(stored.argumentsRedacted as { pin: string }).pin}</code>)</span>`,
    );
    expect(page).not.toContain('PIN-9Q7Z');
    expect(page).toContain(`<input type="hidden" name="hash" value="${argumentsHash(stored.arguments)}"/>`);
    expect(argumentsHash(stored.arguments)).toBe(stored.argumentsHash);
  });

  it('cuts long texts in the pending list, says by how much, and warns', async () => {
    const page = await html('/');
    const card = new RegExp(`<article class="card" aria-labelledby="p-${id}">(.*?)</article>`, 's').exec(
      page,
    )![1]!;
    expect(text(/<div class="warn" role="note">(.*?)<\/div>/s.exec(card)![1]!)).toBe(
      'Look closely: this request holds 3 hidden characters and 2 words mixing scripts, marked in it; the detail page explains each mark. What you read may not be what will run.',
    );
    const body = field(card, 'body');
    expect(text(/<div class="text">(.*?)<\/div>/s.exec(body)![1]!)).toBe(`${BODY.slice(0, 160)}…`);
    expect(body).toContain(
      '<p class="hint">Text, 5,000 characters; the first 160 are shown, the detail page shows all.</p>',
    );
  });
});

describe('a request changed in storage', () => {
  it('shows the arguments that will run, not the audit copy, and says where the two differ', async () => {
    const id = await requestLetter({ to: 'anna@nordlicht.example', subject: 'Hi', body: 'Hello', pin: '1' });
    await db.sql`
      update bulkhead_approvals set arguments_redacted = jsonb_set(arguments_redacted, '{to}', '"ben@nordlicht.example"')
      where id = ${id}`;
    const page = await html(`/approvals/${id}`);
    const to = field(page, 'to');
    expect(to).toContain('<div class="text"><bdi>anna@nordlicht.example</bdi></div>');
    expect(text(to)).toContain(
      'The audit copy of this request differs here: the stored request was changed after it was made. Reject it.',
    );
    expect(text(field(page, 'body'))).not.toContain('differs');
    expect(page).not.toContain('ben@nordlicht.example');
  });

  it('refuses a decision on arguments that changed after the page was shown (the hidden hash field)', async () => {
    const id = await requestLetter({ to: 'anna@nordlicht.example', subject: 'Hi', body: 'Hello', pin: '1' });
    const page = await html(`/approvals/${id}`);
    const shown = /name="hash" value="([0-9a-f]{64})"/.exec(page)![1]!;
    const swapped = { to: 'mallory@evil.example', subject: 'Hi', body: 'Hello', pin: '1' };
    await db.sql`
      update bulkhead_approvals set arguments = ${db.sql.json(swapped)}, arguments_hash = ${argumentsHash(swapped)}
      where id = ${id}`;
    const res = await fetch(`${base}/approvals/${id}/decide`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ decision: 'approve', hash: shown }),
    });
    expect(res.status).toBe(409);
    expect(text(await res.text())).toContain(
      `Approval ${id} no longer has the arguments you were shown; review it again.`,
    );
    expect((await getApproval(db.sql, id))!.status).toBe('pending');
    const again = await html(`/approvals/${id}`);
    expect(again).toContain('<div class="text"><bdi>mallory@evil.example</bdi></div>');
    expect(again).toContain(`name="hash" value="${argumentsHash(swapped)}"`);
  });

  it('says when the stored arguments no longer match their recorded hash', async () => {
    const id = await requestLetter({ to: 'anna@nordlicht.example', subject: 'Hi', body: 'Hello', pin: '1' });
    await db.sql`update bulkhead_approvals set arguments = jsonb_set(arguments, '{body}', '"Goodbye"') where id = ${id}`;
    const page = await html(`/approvals/${id}`);
    expect(text(page)).toContain(
      'The stored arguments do not match the hash recorded with the request: they were changed after it was made. Approving is refused; reject it and ask for a new request.',
    );
    expect(field(page, 'body')).toContain('<div class="text"><bdi>Goodbye</bdi></div>');
  });
});
