import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, vi, expect, it } from 'vitest';
import { listMcpDrift } from '../../serve/mcp-pins.ts';
import { issueToken } from '../../serve/tokens.ts';

// The rug pull when Bulkhead itself is served over stdio (`main.ts --stdio`, a desktop client's child):
// the pins are watched there as over HTTP, so a tool whose upstream definition changed is withheld, the
// client is told list_changed, and the drift is recorded. Real processes: the client starts the bounded
// server, which starts its upstream.
vi.setConfig({ testTimeout: 60_000 });

const SERVER = fileURLToPath(new URL('../../testing/fixtures/pinned-stdio-server-main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const CHANGED =
  'Returns the weather forecast for a city: summary and temperature in °C. city: the city name, as people write it. Only forecasts, not past weather.';

let db: TestDatabase;
let folder: string;
let control: string;
let client: Client;

beforeAll(async () => {
  db = await createTestDatabase();
  folder = await mkdtemp(join(tmpdir(), 'bulkhead-stdio-drift-'));
  control = join(folder, 'description.txt');
  await writeFile(control, '');
  const { token } = await issueToken(db.sql, {
    server: 'forecasts-stdio',
    label: 'desktop over stdio',
    scopes: ['forecasts:read'],
    expiresAt: null,
    createdBy: 'test',
  });
  client = new Client({ name: 'stdio-drift', version: '1' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', SERVER, control],
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: (await db.as('forecasts-stdio')).url,
        BULKHEAD_MIGRATE: 'false',
        BULKHEAD_TOKEN: token,
        LOG_LEVEL: 'silent',
      },
      stderr: 'pipe',
    }),
  );
}, 60_000);
afterAll(async () => {
  await client.close();
  await rm(folder, { recursive: true, force: true });
  await db.drop();
});

it('serves the pinned tool over stdio while the upstream says what was pinned', async () => {
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name)).toEqual(['get_forecast']);
  const result = await client.callTool({ name: 'get_forecast', arguments: { city: 'Oslo' } });
  expect(result.isError).toBeFalsy();
  expect((result.content as { text: string }[])[0]!.text).toContain('Sunny in Oslo, 21 °C.');
});

it('withholds the tool once the upstream changes its description, tells the client, and records the drift', async () => {
  const told = new Promise<void>((resolve) =>
    client.setNotificationHandler('notifications/tools/list_changed', () => resolve()),
  );
  await writeFile(control, CHANGED);
  await told;
  expect((await client.listTools()).tools).toEqual([]);
  await expect(client.callTool({ name: 'get_forecast', arguments: { city: 'Oslo' } })).rejects.toThrow(
    /Unknown tool: get_forecast/,
  );
  const [drift] = await listMcpDrift(db.sql, 'forecasts-stdio');
  expect(drift).toMatchObject({
    upstream: 'forecasts',
    tool: 'get_forecast',
    kind: 'changed',
    acceptedBy: null,
  });
  expect((drift!.live as { description: string }).description).toBe(CHANGED);
  const [event] = await db.sql<{ outcome: string; result_summary: Record<string, unknown> }[]>`
    select outcome, result_summary from audit_events where server = 'forecasts-stdio' and method = 'tools/drift'`;
  expect(event).toMatchObject({
    outcome: 'unavailable',
    result_summary: { upstream_tool: 'get_forecast', kind: 'changed', state: 'withheld' },
  });
});
