// The docs site: `pnpm docs:dev` serves it, `pnpm docs:build` builds it into docs/.vitepress/dist.
// VitePress: Markdown in, one dev dependency, and a build that fails on a dead link
// (`ignoreDeadLinks` is left at its default). test/docs-site.test.ts checks anchors and that every
// page is reachable from the navigation.
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig, type DefaultTheme } from 'vitepress';

const docs = fileURLToPath(new URL('..', import.meta.url));

/** The handbook's groups: one folder each, the documents dev-knowledge serves (docs/handbook). */
const HANDBOOK = [
  ['adr', 'Decisions (ADRs)'],
  ['guides', 'Guides'],
  ['api', 'API reference'],
  ['runbooks', 'Runbooks'],
] as const;

/** A handbook document's title, from the front matter the ingester reads too. */
const titleOf = (file: string) =>
  /^title:\s*"?(.*?)"?\s*$/m.exec(readFileSync(file, 'utf8'))?.[1] ?? file.replace(/\.md$/, '');

/** One sidebar group per handbook folder, every document in it, in file order. */
export const handbookSidebar = (): DefaultTheme.SidebarItem[] =>
  HANDBOOK.map(([folder, text]) => ({
    text,
    collapsed: true,
    items: readdirSync(join(docs, 'handbook', folder))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => ({
        text: titleOf(join(docs, 'handbook', folder, f)),
        link: `/handbook/${folder}/${f.replace(/\.md$/, '')}`,
      })),
  }));

/** Pages that show a file of the repository as it is (`<!--@include: …-->`): page → that file. */
const INCLUDED: Record<string, string> = {
  'architecture.md': 'ARCHITECTURE.md',
  'infra.md': 'infra/README.md',
  'prometheus.md': 'infra/prometheus/README.md',
  'servers/admin.md': 'servers/admin/README.md',
  'servers/customer.md': 'servers/customer/README.md',
  'servers/dev-knowledge.md': 'servers/dev-knowledge/README.md',
  'servers/ops.md': 'servers/ops/README.md',
  'servers/console.md': 'apps/console/README.md',
};

/**
 * Where a relative link of an included file goes on the site: to the page that shows the file it
 * points at, or nowhere (undefined) when that file has no page, such as `grants.sql`.
 */
export function siteLink(page: string, href: string): string | undefined {
  const [path = '', hash] = href.split('#');
  const target = posix.normalize(posix.join(posix.dirname(INCLUDED[page]!), path)).replace(/\/$/, '');
  const shown = Object.entries(INCLUDED).find(([, file]) => file === target)?.[0];
  const inDocs =
    target.startsWith('docs/') && target.endsWith('.md') ? target.slice('docs/'.length) : undefined;
  const to = shown ?? inDocs;
  if (!to) return undefined;
  return '/' + to.replace(/(^|\/)index\.md$/, '$1').replace(/\.md$/, '') + (hash ? `#${hash}` : '');
}

const sidebar: DefaultTheme.SidebarItem[] = [
  {
    text: 'Introduction',
    items: [
      { text: 'Getting started', link: '/getting-started' },
      { text: 'Tutorial: your own system', link: '/tutorial' },
      { text: 'Concepts', link: '/concepts' },
      { text: 'Architecture', link: '/architecture' },
    ],
  },
  {
    text: 'Servers',
    items: [
      { text: 'Overview', link: '/servers/' },
      { text: 'admin', link: '/servers/admin' },
      { text: 'customer', link: '/servers/customer' },
      { text: 'dev-knowledge', link: '/servers/dev-knowledge' },
      { text: 'ops', link: '/servers/ops' },
      { text: 'console', link: '/servers/console' },
    ],
  },
  {
    text: 'Trust',
    items: [
      { text: 'Approvals and tasks', link: '/approvals' },
      { text: 'OAuth', link: '/oauth' },
      { text: 'Database separation', link: '/database' },
      { text: 'The audit log', link: '/audit' },
      { text: 'What the model sees', link: '/model' },
    ],
  },
  {
    text: 'Running',
    items: [
      { text: 'Configuration', link: '/configuration' },
      { text: 'Deployment', link: '/deployment' },
      { text: 'Images and Kubernetes', link: '/infra' },
      { text: 'Prometheus', link: '/prometheus' },
      { text: 'Faults', link: '/faults' },
      { text: 'Speed', link: '/speed' },
    ],
  },
  {
    text: 'Development',
    items: [
      { text: 'Tests and CI', link: '/tests' },
      { text: 'The CLI', link: '/cli' },
      { text: 'Changelog', link: '/changelog' },
    ],
  },
  { text: 'Handbook', link: '/handbook', items: handbookSidebar() },
];

export default defineConfig({
  title: 'Bulkhead',
  description: 'MCP servers split by trust boundary',
  cleanUrls: true,
  lastUpdated: false,
  themeConfig: {
    nav: [
      { text: 'Getting started', link: '/getting-started' },
      { text: 'Concepts', link: '/concepts' },
      { text: 'Servers', link: '/servers/' },
      { text: 'Handbook', link: '/handbook' },
    ],
    sidebar,
    outline: [2, 3],
    search: { provider: 'local' },
  },
  markdown: {
    config(md) {
      // A handbook document keeps its title in the front matter (the ingester reads it there)
      // and has no `# heading` of its own: the page shows the title as its heading.
      md.core.ruler.push('front_matter_title', (state) => {
        const fm = (state.env as { frontmatter?: { title?: string; kind?: string } }).frontmatter;
        if (!fm?.kind || !fm.title) return;
        if (state.tokens.some((t) => t.type === 'heading_open' && t.tag === 'h1')) return;
        const open = new state.Token('heading_open', 'h1', 1);
        const inline = new state.Token('inline', '', 0);
        const text = new state.Token('text', '', 0);
        text.content = fm.title;
        inline.content = fm.title;
        inline.children = [text];
        const close = new state.Token('heading_close', 'h1', -1);
        state.tokens.unshift(open, inline, close);
      });
      // An included README links the way it must on GitHub, relative to its own folder.
      md.core.ruler.push('included_links', (state) => {
        const page = (state.env as { relativePath?: string }).relativePath ?? '';
        if (!INCLUDED[page]) return;
        for (const block of state.tokens) {
          if (!block.children) continue;
          const kept = [];
          let dropped = 0;
          for (const t of block.children) {
            const href = t.type === 'link_open' ? t.attrGet('href') : null;
            if (href !== null && !/^([a-z]+:|#|\/)/.test(href)) {
              const to = siteLink(page, href);
              if (to === undefined) {
                dropped++;
                continue;
              }
              t.attrSet('href', to);
            }
            if (t.type === 'link_close' && dropped) {
              dropped--;
              continue;
            }
            kept.push(t);
          }
          block.children = kept;
        }
      });
    },
  },
});
