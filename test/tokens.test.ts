import { type ServerDefinition } from '@bulkhead/core';
import { issueToken, revokeToken } from '@bulkhead/core/operator';
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { DEMO_CUSTOMER, seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { customerServer } from '../servers/customer/src/server.ts';
import { devKnowledgeServer } from '../servers/dev-knowledge/src/server.ts';
import { discoverMcpServers, loadServerDefinition, type McpServerManifest } from './servers.ts';
import { startTestUpstreams, type TestUpstreams } from './upstreams.ts';

/**
 * Every MCP server under servers/, found by its manifest, with the read call of its manifest
 * (`bulkhead.probe`) that succeeds on the demo data; a customer-bound server's tokens see the demo customer.
 */
const SERVERS: {
  manifest: McpServerManifest;
  def: ServerDefinition;
  customerId: string | null;
  tool: string;
  args: Record<string, unknown>;
}[] = await Promise.all(
  discoverMcpServers().map(async (m) => {
    if (!m.probe) throw new Error(`servers/${m.name}/package.json: bulkhead.probe is missing`);
    return {
      manifest: m,
      def: await loadServerDefinition(m),
      customerId: m.customerBound ? DEMO_CUSTOMER : null,
      tool: m.probe.tool,
      args: m.probe.arguments,
    };
  }),
);

let db: TestDatabase;
const running = new Map<string, TestServer>();
const own = new Map<string, string>();
const reached: TestUpstreams[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  for (const s of SERVERS) {
    // A server over another system gets it (real, or its own stand-in), so that its probe answers.
    const up = await startTestUpstreams(s.manifest);
    reached.push(up);
    running.set(
      s.def.name,
      await startTestServer(s.def, {
        db,
        upstreams: up.upstreams,
        ...(up.mcpUpstreams ? { mcpUpstreams: up.mcpUpstreams } : {}),
      }),
    );
    own.set(s.def.name, await issueTestToken(db.sql, s.def, { customerId: s.customerId }));
  }
}, 60_000);
afterAll(async () => {
  for (const s of running.values()) await s.close();
  for (const up of reached) await up.close();
  await db.drop();
});

function rpcCall(tool: string, args: Record<string, unknown>) {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: tool, arguments: args },
  });
}

async function post(url: URL, auth: string | undefined, body: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(auth === undefined ? {} : { authorization: auth }),
    },
    body,
  });
}

const connect = (url: URL, token: string) => connectTestClient(url, token, 'matrix');

/** Events of calls that reached a handler or a gate. */
async function ranCount(server: string): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from audit_events
    where server = ${server} and outcome in ('ok', 'tool_error', 'timeout', 'internal_error', 'pending_approval', 'invalid_arguments')`;
  return row!.n;
}

describe.each(SERVERS)('the token matrix on $def.name', ({ def, customerId, tool, args }) => {
  it('accepts its own token and refuses every other, before any tool runs', async () => {
    const server = running.get(def.name)!;
    const scopes = [...def.catalog.scopes];
    // A server with a single scope gets a token with a scope it does not use at all.
    const otherScope = scopes.find((s) => s !== def.catalog.byName.get(tool)!.scope) ?? 'unrelated:read';
    const revoked = await issueTestToken(db.sql, def, { customerId, label: 'revoked' });
    const [revokedId] = revoked.split('_').slice(2, 3);
    await revokeToken(db.sql, revokedId!);
    const expired = await issueTestToken(db.sql, def, {
      customerId,
      label: 'expired',
      expiresAt: new Date(Date.now() - 1000),
    });
    const narrow = await issueTestToken(db.sql, def, { customerId, label: 'narrow', scopes: [otherScope] });
    const others = SERVERS.filter((s) => s.def.name !== def.name).map((s) => own.get(s.def.name)!);
    // The same secrets under this server's prefix: only the database's audience check can refuse them.
    const [, , otherId, ...otherSecret] = others[0]!.split('_');
    const relabelled = `bh_${def.name}_${otherId}_${otherSecret.join('_')}`;
    const { token: approver } = await issueToken(db.sql, {
      kind: 'approver',
      server: 'console',
      label: 'an approver',
      scopes: ['approvals:decide'],
      expiresAt: null,
      createdBy: 'test',
    });
    const [, , approverId, ...approverSecret] = approver.split('_');
    const approverRelabelled = `bh_${def.name}_${approverId}_${approverSecret.join('_')}`;
    const body = rpcCall(tool, args);

    const client = await connect(server.url, own.get(def.name)!);
    const ok = await client.callTool({ name: tool, arguments: args });
    expect(ok.isError).toBeFalsy();
    await client.close();
    const ranBefore = await ranCount(def.name);

    const cases: [string, string | undefined, URL, number][] = [
      ...others.map(
        (t, i) =>
          [`another server's token #${i + 1}`, `Bearer ${t}`, server.url, 401] as [
            string,
            string,
            URL,
            number,
          ],
      ),
      // Any refused token is 401 invalid_token (MCP authorization: 403 is for insufficient scope only).
      ["another server's token under this prefix", `Bearer ${relabelled}`, server.url, 401],
      ['approver token', `Bearer ${approver}`, server.url, 401],
      ['approver token under this prefix', `Bearer ${approverRelabelled}`, server.url, 401],
      ['revoked', `Bearer ${revoked}`, server.url, 401],
      ['expired', `Bearer ${expired}`, server.url, 401],
      // What a token may not use does not exist for it: the same answer as a tool no server has.
      ['wrong scopes', `Bearer ${narrow}`, server.url, 200],
      ['malformed', 'Bearer not-a-token', server.url, 401],
      ['malformed header', `Token ${own.get(def.name)}`, server.url, 401],
      ['none', undefined, server.url, 401],
      // A valid header too: the token in the URL alone is the reason for the refusal.
      [
        'in query string',
        `Bearer ${own.get(def.name)}`,
        new URL(`${server.url.href}?access_token=${own.get(def.name)}`),
        401,
      ],
    ];
    const statuses: Record<string, number> = {};
    for (const [name, auth, url] of cases) {
      const res = await post(url, auth, body);
      statuses[name] = res.status;
      const challenge = res.headers.get('www-authenticate') ?? '';
      if (res.status === 401)
        expect(challenge).toMatch(/^Bearer realm="[a-z-]+", error="invalid_token", error_description="/);
      if (name === 'wrong scopes') {
        const text = await res.text();
        expect(text).toContain('"code":-32602');
        expect(text).toContain(`Unknown tool: ${tool}`);
      }
    }
    expect(statuses).toEqual(Object.fromEntries(cases.map(([name, , , status]) => [name, status])));
    expect(await ranCount(def.name)).toBe(ranBefore);
    const refusals = await db.sql<{ outcome: string; n: number }[]>`
      select outcome, count(*)::int as n from audit_events
      where server = ${def.name} and outcome in ('unauthorized', 'forbidden', 'unknown_tool')
      group by outcome order by outcome`;
    expect(refusals).toEqual([
      { outcome: 'unauthorized', n: cases.length - 1 },
      { outcome: 'unknown_tool', n: 1 },
    ]);
    // A real token refused for its state is named in the log, so a leaked one can be traced after revocation.
    const named = await db.sql`
      select token_id, result_summary->>'reason' as reason from audit_events
      where server = ${def.name} and token_label in ('revoked', 'expired') and outcome = 'unauthorized' order by seq`;
    expect(named).toEqual([
      { token_id: revokedId, reason: 'revoked' },
      { token_id: expired.split('_')[2], reason: 'expired' },
    ]);
  });
});

describe('separation', () => {
  it('a customer token lists only customer tools; admin tools do not exist there', async () => {
    const client = await connect(running.get('customer')!.url, own.get('customer')!);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...customerServer.catalog.byName.keys()].sort());
    for (const adminTool of adminServer.catalog.byName.keys()) {
      if (customerServer.catalog.byName.has(adminTool)) continue;
      await expect(client.callTool({ name: adminTool, arguments: {} })).rejects.toMatchObject({
        code: -32602,
      });
    }
    await client.close();
  });

  it('a token with fewer scopes does not see the other tools', async () => {
    const token = await issueTestToken(db.sql, adminServer, { scopes: ['tickets:read'] });
    const client = await connect(running.get('admin')!.url, token);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      [...adminServer.catalog.tools].filter((t) => t.scope === 'tickets:read').map((t) => t.name),
    );
    await client.close();
  });

  it('revoking one client’s token fails its calls while another client goes on', async () => {
    const url = running.get('dev-knowledge')!.url;
    const a = await issueTestToken(db.sql, devKnowledgeServer, { label: 'client A' });
    const b = await issueTestToken(db.sql, devKnowledgeServer, { label: 'client B' });
    const clientA = await connect(url, a);
    const clientB = await connect(url, b);
    const call = { name: 'search_docs', arguments: { query: 'audit' } };
    expect((await clientA.callTool(call)).isError).toBeFalsy();
    expect((await clientB.callTool(call)).isError).toBeFalsy();
    await revokeToken(db.sql, a.split('_')[2]!);
    // How soon is the token cache's promise, tested with the clock in hand (packages/core/src/serve/tokens.test.ts);
    // here, that the server refuses the revoked token's next calls (a token never refused times the test out).
    let refused: unknown;
    while (!refused)
      refused = await clientA.callTool(call).then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(String(refused)).toMatch(/401|nauthorized|invalid_token/);
    expect((await clientB.callTool(call)).isError).toBeFalsy();
    await clientB.close();
    await clientA.close().catch(() => {});
  });
});
