import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { createLogger } from '@bulkhead/core';
import { issueToken } from '@bulkhead/core/operator';
import { chromiumLaunchOptions } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createConsoleApp, type ConsoleApp } from '../../app.tsx';

// Cookies ignore ports: any page served from another port of 127.0.0.1 can set `bh_login` for the
// console. Here such a page — the attacker — tries to sign the approver's browser in as itself.

const logger = createLogger({ level: 'silent' });
let db: TestDatabase;
let consoleApp: ConsoleApp;
let http: ServerType;
let attacker: Server;
let browser: Browser;
let consoleUrl: string;
let attackerUrl: string;
let victimToken: string;
let attackerToken: string;

const PLANTED = 'planted-by-another-port-0000000000000000000';

/** An auto-submitting sign-in form to the console, as the attacker's page serves it. */
function attackPage(csrf: string): string {
  return `<!doctype html><title>Free coupons</title>
<form id="f" method="post" action="${consoleUrl}/login">
<input name="_csrf" value="${csrf}"><input name="token" value="${attackerToken}">
</form><script>document.getElementById('f').submit()</script>`;
}

beforeAll(async () => {
  db = await createTestDatabase();
  const issue = async (label: string) =>
    (
      await issueToken(db.sql, {
        kind: 'approver',
        server: 'console',
        label,
        scopes: ['approvals:decide'],
        expiresAt: null,
        createdBy: 'test',
      })
    ).token;
  victimToken = await issue('Ana Berg');
  attackerToken = await issue('Mallory');
  consoleApp = createConsoleApp({ sql: (await db.as('console')).sql, logger, publicUrl: 'http://127.0.0.1' });
  http = serve({ fetch: consoleApp.app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise<void>((resolve) => http.once('listening', resolve));
  consoleUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  attacker = createHttpServer((req, res) => {
    void (async () => {
      const plant = (value: string) => [
        // A longer path is sent first, ahead of the console's own cookie; Path=/ replaces it.
        `bh_login=${value}; Path=/login; Max-Age=3600; SameSite=Lax`,
        `bh_login=${value}; Path=/; Max-Age=3600; SameSite=Lax`,
      ];
      res.setHeader('content-type', 'text/html');
      if (req.url === '/plant') {
        res.setHeader('set-cookie', plant(PLANTED));
        res.end('<!doctype html><title>Nothing to see</title><p>Nothing to see here.</p>');
      } else if (req.url === '/attack-planted') {
        res.setHeader('set-cookie', plant(PLANTED));
        res.end(attackPage(PLANTED));
      } else if (req.url === '/attack-minted') {
        // The attacker's own process fetches a genuine form from the console and plants its cookie.
        const form = await fetch(`${consoleUrl}/login`);
        const binding = /^bh_login=([^;]+)/.exec(form.headers.getSetCookie()[0]!)![1]!;
        const nonce = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
        res.setHeader('set-cookie', plant(binding));
        res.end(attackPage(nonce));
      } else {
        res.statusCode = 404;
        res.end();
      }
    })();
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
  browser = await chromium.launch(chromiumLaunchOptions());
});
afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => attacker.close(resolve));
  await new Promise((resolve) => http.close(resolve));
  await consoleApp.close();
  await db.drop();
});

async function sessions(): Promise<number> {
  return (await db.sql<{ n: number }[]>`select count(*)::int as n from bulkhead_console_sessions`)[0]!.n;
}

async function lastSignIn() {
  const [e] = await db.sql<{ outcome: string; result_summary: unknown }[]>`
    select outcome, result_summary from audit_events where method = 'console/sign-in' order by seq desc limit 1`;
  return e;
}

it('a page on another loopback port that plants the sign-in cookie and posts its own token signs no one in', async () => {
  for (const attack of ['/attack-planted', '/attack-minted']) {
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const response = page.waitForResponse(`${consoleUrl}/login`);
    await page.goto(`${attackerUrl}${attack}`);
    const refused = await response;
    expect(refused.status()).toBe(403);
    expect(await refused.text()).toBe('Cross-origin form refused.');
    // The browser did carry the planted cookie to the console: cookies ignore ports.
    expect((await refused.request().allHeaders()).cookie).toMatch(/^bh_login=[\w-]+; bh_login=[\w-]+$/);
    expect((await context.cookies(consoleUrl)).filter((c) => c.name === 'bh_session')).toEqual([]);
    expect(await sessions()).toBe(0);
    expect(await lastSignIn()).toEqual({ outcome: 'forbidden', result_summary: { reason: 'cross_origin' } });
    await page.screenshot({ path: `/tmp/bulkhead-console-sign-in${attack}.png` });
    await context.close();
  }
});

it('a planted sign-in cookie neither signs the approver in as someone else nor stops them signing in', async () => {
  const context = await browser.newContext({ viewport: { width: 1000, height: 600 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  await page.goto(`${attackerUrl}/plant`);
  expect(
    (await context.cookies(`${consoleUrl}/login`))
      .filter((c) => c.name === 'bh_login')
      .map((c) => [c.path, c.value]),
  ).toEqual([
    ['/login', PLANTED],
    ['/', PLANTED],
  ]);

  await page.goto(`${consoleUrl}/login`);
  await page.getByLabel('Approver token').fill(victimToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
  expect(await page.locator('header .who span').textContent()).toBe('Signed in as Ana Berg');
  expect(await lastSignIn()).toEqual({ outcome: 'ok', result_summary: { session_hours: 12 } });
  await page.screenshot({ path: '/tmp/bulkhead-console-sign-in-after-plant.png' });
  await context.close();
});
