import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { ServerDefinition } from '@bulkhead/core';
import { lintTools, modelPart } from '@bulkhead/core/operator';
import { issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoverMcpServers, discoverServerDefinitions } from './servers.ts';

interface Icon {
  src: string;
  mimeType?: string;
  sizes?: string[];
}

/** A data URI's media type and its content, decoded (base64 or percent-encoded). */
function decodeDataUri(src: string): { mimeType: string; text: string } | undefined {
  const match = /^data:([^;,]+)((?:;[^;,]+)*),(.*)$/s.exec(src);
  if (!match) return undefined;
  const base64 = match[2]!.split(';').includes('base64');
  const text = base64 ? Buffer.from(match[3]!, 'base64').toString('utf8') : decodeURIComponent(match[3]!);
  return { mimeType: match[1]!, text };
}

/** What is wrong with an icon, if anything: each must be a data URI whose content is what its mimeType says. */
function iconProblems(icon: Icon): string[] {
  const problems: string[] = [];
  const data = decodeDataUri(icon.src);
  if (!data) return [`src is not a data: URI (${icon.src.slice(0, 40)})`];
  if (data.mimeType !== icon.mimeType)
    problems.push(`src is ${data.mimeType}, mimeType says ${icon.mimeType}`);
  if (
    data.mimeType === 'image/svg+xml' &&
    !/^<svg xmlns='http:\/\/www\.w3\.org\/2000\/svg'[^>]*>.*<\/svg>$/s.test(data.text)
  )
    problems.push(`src does not decode to one SVG element: ${data.text.slice(0, 60)}`);
  if (!icon.sizes?.length || !icon.sizes.every((s) => s === 'any' || /^\d+x\d+$/.test(s)))
    problems.push(`sizes ${JSON.stringify(icon.sizes)} is not a list of WxH or "any"`);
  return problems;
}

let db: TestDatabase;
const definitions: ServerDefinition[] = await discoverServerDefinitions();
const running = new Map<string, { server: TestServer; token: string }>();

beforeAll(async () => {
  db = await createTestDatabase();
  for (const def of definitions) {
    const customerId = discoverMcpServers().find((m) => m.name === def.name)!.customerBound ? 'C-1001' : null;
    if (customerId)
      await db.sql`insert into customers (id, name, email) values ('C-1001', 'Nordlicht GmbH', 'a@b.example') on conflict do nothing`;
    running.set(def.name, {
      server: await startTestServer(def, { db }),
      token: await issueTestToken(db.sql, def, { customerId, scopes: [...def.catalog.scopes] }),
    });
  }
});
afterAll(async () => {
  for (const { server } of running.values()) await server.close();
  await db?.drop();
});

/** tools/list of a server as a real client gets it, with a token of every scope. */
async function listTools(name: string) {
  const { server, token } = running.get(name)!;
  const client = new Client({ name: 'icon-check', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(server.url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  try {
    return (await client.listTools()).tools;
  } finally {
    await client.close();
  }
}

it('finds every MCP server, each with tools', () => {
  expect(definitions.map((d) => d.name)).toEqual(
    expect.arrayContaining(['admin', 'customer', 'dev-knowledge', 'ops']),
  );
  for (const def of definitions) expect(def.catalog.tools.length, def.name).toBeGreaterThan(0);
});

describe.each(definitions.map((d) => d.name))('tools/list of %s, every scope', (name) => {
  it('gives every tool an icon: a data URI that decodes to its stated mimeType, with sizes', async () => {
    const tools = await listTools(name);
    const def = definitions.find((d) => d.name === name)!;
    expect(tools.map((t) => t.name)).toEqual(def.catalog.tools.map((t) => t.name));
    const problems = tools.flatMap((t) => {
      const icons = (t.icons ?? []) as Icon[];
      if (!icons.length) return [`${t.name}: no icon`];
      return icons.flatMap((icon) => iconProblems(icon).map((p) => `${t.name}: ${p}`));
    });
    expect(problems).toEqual([]);
  });

  it('keeps the part a model reads within 6,000 characters; the whole list is measured, not budgeted', async () => {
    const tools = await listTools(name);
    const { size, findings } = lintTools(tools, { modelBudgetChars: 6000 });
    expect(size.modelChars).toBe(modelPart(tools).length);
    expect(size.modelChars).toBeLessThanOrEqual(6000);
    expect(findings.filter((f) => f.rule === 'tools-budget')).toEqual([]);
    expect(size.chars).toBe(JSON.stringify(tools).length);
  });
});
