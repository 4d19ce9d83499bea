import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { chromiumLaunchOptions } from '@bulkhead/core/testing';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root } from './helpers.ts';

// The docs site (docs/, VitePress) as a reader gets it: built the way `pnpm docs:build` builds it,
// into a folder of its own, then read back as HTML. VitePress fails the build on a dead link to a
// page; this also checks anchors, assets, and that the navigation reaches every page.

let out = '';
let build = { code: -1, output: '' };

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), 'bulkhead-docs-'));
  build = await new Promise((done) => {
    const child = spawn('pnpm', ['exec', 'vitepress', 'build', 'docs', '--outDir', out], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => done({ code: code ?? -1, output }));
  });
}, 180_000);

afterAll(async () => {
  if (out) await rm(out, { recursive: true, force: true });
});

/** Every file under `dir`, relative to it, with `/` separators. */
const filesUnder = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split('\\').join('/'));

/** The pages of the built site: its HTML files but the 404 page. */
const pages = () => filesUnder(out).filter((f) => f.endsWith('.html') && f !== '404.html');

/** The built file a site-absolute path names (clean URLs: `/oauth` is oauth.html, `/servers/` servers/index.html). */
function fileOf(path: string): string {
  const clean = decodeURI(path).replace(/^\//, '');
  if (clean === '' || clean.endsWith('/')) return `${clean}index.html`;
  if (/\.[a-z0-9]+$/i.test(clean)) return clean;
  return `${clean}.html`;
}

/** Where the page's own content and navigation link: hrefs that stay on the site, as site-absolute paths. */
function internalLinks(page: string, html: string): string[] {
  return [...html.matchAll(/<a [^>]*href="([^"]+)"/g)]
    .map((m) => m[1]!.replaceAll('&amp;', '&'))
    .filter((href) => !/^[a-z][a-z0-9+.-]*:/i.test(href))
    .map((href) => (href.startsWith('#') ? `/${page.replace(/(index)?\.html$/, '')}${href}` : href))
    .map((href) => (href.startsWith('/') ? href : '/' + relative(root, resolve(root, dirname(page), href))));
}

const idsOf = (html: string) => new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]!));

describe('the docs site', () => {
  it('builds, with no dead link', () => {
    expect(build.code, build.output).toBe(0);
    expect(build.output).not.toContain('dead link');
    expect(pages().length).toBeGreaterThan(60);
  });

  it('has no broken internal link, anchor or asset on any page', () => {
    const broken: string[] = [];
    const html = new Map(pages().map((p) => [p, readFileSync(join(out, p), 'utf8')]));
    for (const [page, text] of html) {
      for (const link of internalLinks(page, text)) {
        const [path = '', hash] = link.split('#');
        const file = fileOf(path);
        if (!existsSync(join(out, file))) {
          broken.push(`${page}: ${link} (no ${file})`);
          continue;
        }
        if (hash && file.endsWith('.html') && !idsOf(html.get(file) ?? '').has(decodeURIComponent(hash)))
          broken.push(`${page}: ${link} (no #${hash} in ${file})`);
      }
      for (const m of text.matchAll(/<img [^>]*src="(\/[^"]+)"/g))
        if (!existsSync(join(out, fileOf(m[1]!)))) broken.push(`${page}: image ${m[1]}`);
    }
    expect(broken).toEqual([]);
  });

  it('reaches every page from the navigation bar and the sidebar', () => {
    const html = readFileSync(join(out, 'getting-started.html'), 'utf8');
    const navigation = [
      html.slice(html.indexOf('<header'), html.indexOf('</header>')),
      html.slice(html.indexOf('<aside class="VPSidebar"'), html.indexOf('</aside>')),
    ].join('\n');
    expect(navigation).toContain('VPSidebarItem');
    const linked = new Set(
      internalLinks('getting-started.html', navigation).map((link) => fileOf(link.split('#')[0]!)),
    );
    const unreached = pages().filter((p) => !linked.has(p));
    expect(unreached).toEqual([]);
    // Every handbook document dev-knowledge serves is a page of the site.
    const handbook = filesUnder(join(root, 'docs', 'handbook')).filter((f) => f.endsWith('.md'));
    expect(handbook).toHaveLength(42);
    for (const doc of handbook) expect(linked).toContain(`handbook/${doc.replace(/\.md$/, '.html')}`);
  });

  it('shows a handbook document with its front-matter title as the page heading', () => {
    const page = readFileSync(join(out, 'handbook/adr/adr-0005-tokens-bound-to-one-server.html'), 'utf8');
    expect(page).toContain('<h1>ADR-0005: Access tokens are bound to one server</h1>');
    expect(page).not.toContain('kind: adr');
  });
});

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

/** The built site over HTTP, clean URLs as a static host serves them. */
async function serveSite(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const file = join(out, fileOf(new URL(req.url ?? '/', 'http://x').pathname));
    if (!file.startsWith(out) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('the docs site in a real browser', () => {
  it('shows the home page and a concept page as documentation: styled, navigable, with the picture', async () => {
    const { url, server } = await serveSite();
    const browser = await chromium.launch(chromiumLaunchOptions());
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const failed: string[] = [];
      page.on('requestfailed', (r) => failed.push(r.url()));
      page.on('response', (r) => r.status() >= 400 && failed.push(`${r.status()} ${r.url()}`));

      await page.goto(`${url}/`, { waitUntil: 'networkidle' });
      await page.screenshot({ path: '/tmp/bulkhead-docs-home.png', fullPage: true });
      expect(await page.locator('.VPHero .name').innerText()).toBe('Bulkhead');
      expect(await page.locator('.VPNav .VPNavBarMenuLink').allInnerTexts()).toEqual([
        'Getting started',
        'Concepts',
        'Servers',
        'Handbook',
      ]);
      expect(await page.locator('.VPFeature').count()).toBe(4);
      // The theme's stylesheet applied: the hero's name is set large, not in the browser's default.
      const size = await page
        .locator('.VPHero .name')
        .evaluate((e) => parseFloat(getComputedStyle(e).fontSize));
      expect(size).toBeGreaterThan(32);
      const picture = page.locator('img[src="/deployables.svg"]');
      expect(await picture.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(960);

      await page.locator('.VPNav .VPNavBarMenuLink', { hasText: 'Concepts' }).click();
      await page.waitForURL(`${url}/concepts`);
      await page.locator('.VPDoc h1').waitFor();
      await page.screenshot({ path: '/tmp/bulkhead-docs-concepts.png' });
      expect(await page.locator('.VPDoc h1').innerText()).toMatch(/^Concepts/);
      expect(await page.locator('.VPSidebar .VPSidebarItem.level-0 > .item .text').allInnerTexts()).toEqual([
        'Introduction',
        'Servers',
        'Trust',
        'Running',
        'Development',
        'Handbook',
      ]);
      expect(await page.locator('.VPDocAsideOutline .outline-link').first().innerText()).toBe(
        'Trust boundaries',
      );
      expect(
        await page
          .locator('.VPDoc img[src="/deployables.svg"]')
          .evaluate((img: HTMLImageElement) => img.naturalWidth),
      ).toBe(960);
      expect(failed).toEqual([]);
    } finally {
      await browser.close();
      server.close();
    }
  }, 120_000);
});

describe('the README', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');

  it('fits on about two screens', () => {
    expect(readme.length).toBeLessThanOrEqual(10_000);
  });

  it('shows the picture of the deployables and links only to files that exist', () => {
    expect(readme).toContain('](docs/public/deployables.svg)');
    const targets = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
      .map((m) => m[1]!)
      .filter((t) => !/^[a-z]+:/.test(t));
    expect(targets.length).toBeGreaterThan(15);
    expect(targets.filter((t) => !existsSync(join(root, t)))).toEqual([]);
  });
});
