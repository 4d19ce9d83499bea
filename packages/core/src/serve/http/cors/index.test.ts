import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { chromiumLaunchOptions } from '../../../testing/browser.ts';
import {
  addNumbersServer,
  issueTestToken,
  startTestServer,
  type TestServer,
} from '../../../testing/index.ts';

// A browser-based client (the Inspector's web UI and the like) on a page of an allowed origin calls
// the server across origins: preflight, token, call, readable answer. A page of another origin gets nothing.
const def = addNumbersServer('cors-test', 'A server called from a web page.');

let db: TestDatabase;
let server: TestServer;
let pages: Server;
let pagePort: number;
let browser: Browser;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  pages = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>client</title>');
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  pagePort = (pages.address() as AddressInfo).port;
  server = await startTestServer(def, {
    db,
    allowedOrigins: [`http://inspector.example.test:${pagePort}`],
  });
  token = await issueTestToken(db.sql, def);
  const launch = chromiumLaunchOptions();
  // Both page origins resolve to this machine; only one of them is allowed.
  browser = await chromium.launch({
    ...launch,
    args: [...launch.args, '--host-resolver-rules=MAP *.example.test 127.0.0.1'],
  });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await new Promise((resolve) => pages?.close(resolve));
  await db?.drop();
});

/** Opens a page of `origin` and calls the tool from it with fetch, as a web client does. */
async function callFrom(origin: string, bearer: string) {
  const page = await browser.newPage();
  try {
    await page.goto(`${origin}/`);
    return await page.evaluate(
      async ({ url, bearer }) => {
        try {
          const res = await fetch(url, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${bearer}`,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              'mcp-protocol-version': '2025-11-25',
              'x-request-id': 'from-a-web-page',
            },
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              method: 'tools/call',
              params: { name: 'add_numbers', arguments: { a: 2, b: 3 } },
            }),
          });
          return {
            status: res.status,
            body: await res.text(),
            requestId: res.headers.get('x-request-id'),
            challenge: res.headers.get('www-authenticate'),
          };
        } catch (err) {
          return { blocked: String(err) };
        }
      },
      { url: server.url.toString(), bearer },
    );
  } finally {
    await page.close();
  }
}

it('a page of an allowed origin calls a tool across origins and reads the answer and its headers', async () => {
  const answer = await callFrom(`http://inspector.example.test:${pagePort}`, token);
  expect(answer).toMatchObject({ status: 200, requestId: 'from-a-web-page' });
  expect((answer as { body: string }).body).toContain('"structuredContent":{"sum":5}');
});

it('the same page can read a refusal: 401 with its challenge', async () => {
  const answer = await callFrom(`http://inspector.example.test:${pagePort}`, 'bh_cors-test_nope_nope');
  expect(answer).toMatchObject({ status: 401 });
  expect((answer as { challenge: string }).challenge).toMatch(/^Bearer /);
});

it('a page of another origin gets nothing: the browser blocks the call and no tool runs', async () => {
  const answer = await callFrom(`http://elsewhere.example.test:${pagePort}`, token);
  expect(answer).toEqual({ blocked: 'TypeError: Failed to fetch' });
  const ran = await db.sql<{ n: number }[]>`
    select count(*)::int as n from audit_events where tool = 'add_numbers' and outcome = 'ok'`;
  // Only the allowed page's call ran.
  expect(ran[0]!.n).toBe(1);
});
