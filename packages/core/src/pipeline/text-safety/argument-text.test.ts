import type { Client } from '@modelcontextprotocol/client';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { findTextArgumentProblems, textArgumentError } from './argument-text.ts';
import { createServer, defineTool, lineArg, secret } from '../../index.ts';
import {
  callFlat,
  connectTestClient,
  issueTestToken,
  startTestServer,
  type TestServer,
} from '../../testing/index.ts';

const TAIL = '. Nothing was done; call again with corrected arguments.';

describe('textArgumentError', () => {
  it('lets ordinary text through: tab, line breaks, emoji, right-to-left marks, non-Latin scripts', () => {
    expect(
      textArgumentError({
        body: 'Dear team,\r\n\tthe scanner 📠 fails.\n\u200fשלום, Grüße, 東京',
        tags: ['a', 'b'],
        nested: { deeper: [{ text: 'fine' }] },
        n: 3,
        flag: true,
        none: null,
      }),
    ).toBeUndefined();
  });

  it('names every field with NUL, other C0 controls, DEL, C1 controls or unpaired surrogates, never the value', () => {
    const error = textArgumentError({
      query: 'Hu\u0000ber',
      body: 'ok\n\u001b[31mred',
      tags: ['fine', 'x\u007f'],
      nested: { note: '\u0085next' },
      high: 'a\ud800b',
      low: '\udc00',
      clean: 'fine',
    });
    expect(error).toBe(
      'Invalid arguments — ' +
        'query: character 3 is the control character U+0000 (NUL), which no text argument may contain; remove it; ' +
        'body: character 4 is the control character U+001B (ESC), which no text argument may contain; remove it; ' +
        'tags.1: character 2 is the control character U+007F (DEL), which no text argument may contain; remove it; ' +
        'nested.note: character 1 is the control character U+0085 (a C1 control), which no text argument may contain; remove it; ' +
        'high: character 2 is U+D800, half of a surrogate pair without its other half (not valid Unicode text); remove it; ' +
        'low: character 1 is U+DC00, half of a surrogate pair without its other half (not valid Unicode text); remove it' +
        TAIL,
    );
  });

  it('checks keys too, and stops at a depth no tool uses', () => {
    expect(findTextArgumentProblems({ meta: { 'a\u0000b': 'x' } })).toEqual([
      { path: ['meta', 'a\u0000b'], position: 2, codePoint: 0, unpaired: false },
    ]);
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(findTextArgumentProblems({ deep })).toEqual([]);
    expect(textArgumentError('\u0007')).toBe(
      'Invalid arguments — (arguments): character 1 is the control character U+0007 (BEL), which no text argument may contain; remove it' +
        TAIL,
    );
  });
});

describe('every tool of a server, over a real client', () => {
  const ro = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
  const calls: unknown[] = [];
  const def = createServer({
    name: 'text-test',
    version: '1.0.0',
    description: 'A server built in the test.',
    tools: [
      defineTool({
        name: 'save_note',
        title: 'Save note',
        description: 'Saves a note.',
        scope: 'notes:write',
        input: z.strictObject({
          title: lineArg(2, 50),
          body: z.string().max(5000),
          tags: z.array(z.string()).max(5).optional(),
          pin: secret(z.string()).optional(),
        }),
        annotations: ro,
        handler: async (args) => {
          calls.push(args);
          return { saved: true };
        },
      }),
    ],
  });

  let db: TestDatabase;
  let server: TestServer;
  let client: Client;
  beforeAll(async () => {
    db = await createTestDatabase();
    server = await startTestServer(def, { db });
    client = await connectTestClient(server.url, await issueTestToken(db.sql, def));
  });
  afterAll(async () => {
    await client?.close();
    await server?.close();
    await db?.drop();
  });

  it('refuses a NUL in any string before the handler runs, audited as invalid_arguments', async () => {
    const r = await callFlat(client, 'save_note', {
      title: 'Shopping',
      body: 'milk\u0000',
      tags: ['ok', '\u0000'],
      pin: '12\u000034',
    });
    const text =
      'Invalid arguments — ' +
      'body: character 5 is the control character U+0000 (NUL), which no text argument may contain; remove it; ' +
      'tags.1: character 1 is the control character U+0000 (NUL), which no text argument may contain; remove it; ' +
      'pin: character 3 is the control character U+0000 (NUL), which no text argument may contain; remove it' +
      TAIL;
    expect(r).toEqual({ isError: true, text, structured: undefined });
    expect(calls).toEqual([]);
    const events = await db.sql<{ outcome: string; error: string }[]>`
      select outcome, result_summary->>'error' as error from audit_events where tool = 'save_note'`;
    expect(events).toEqual([{ outcome: 'invalid_arguments', error: text }]);
  });

  it('keeps a one-line field on one line, and takes line breaks where text may have them', async () => {
    const r = await callFlat(client, 'save_note', { title: 'Hi\r\nBcc: attacker@example.com', body: 'x' });
    expect(r.text).toBe(
      'Invalid arguments — title: got "Hi\\r\\nBcc: attacker@example.com", expected one line: no line breaks or tabs' +
        TAIL,
    );
    expect(calls).toEqual([]);
    const ok = await callFlat(client, 'save_note', { title: '  Two lines  ', body: 'first\r\nsecond\ttab' });
    expect(ok.isError).toBe(false);
    expect(calls).toEqual([{ title: 'Two lines', body: 'first\r\nsecond\ttab' }]);
  });
});
