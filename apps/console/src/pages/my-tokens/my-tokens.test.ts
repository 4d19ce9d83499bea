import { createHash, randomBytes } from 'node:crypto';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createLogger, createServer, defineTool } from '@bulkhead/core';
import { createAuditWriter } from '@bulkhead/audit';
import { argumentsHash, decideApproval, setGroup } from '@bulkhead/core/operator';
import { startTestServer, type TestServer } from '@bulkhead/core/testing';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createConsoleApp, type ConsoleApp } from '../../app.tsx';
import { personSession, signedIn } from '../../fixtures/people.ts';
import { discoveredServers } from '../../fixtures/servers.ts';

// "My tokens" through the app against the real database and a real MCP server: a person signed in by
// OpenID Connect issues tokens only within their groups' rights, lists and revokes their own only; and the
// console's login, calling the database's functions itself with forged arguments, gets no further.

const whoAmI = defineTool({
  name: 'who_am_i',
  title: 'Who am I',
  description: 'The label, person and scopes of the token the call carries.',
  scope: 'fleet:read',
  input: z.object({}),
  output: z.object({ label: z.string(), owner: z.string().nullable(), scopes: z.array(z.string()) }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  handler: async (_args, ctx) => ({
    label: ctx.access.label,
    owner: ctx.access.owner ?? null,
    scopes: [...ctx.access.scopes],
  }),
});
const fleet = createServer({
  name: 'fleet-demo',
  version: '1.0.0',
  description: 'A server for the My tokens test.',
  tools: [whoAmI],
});

const logger = createLogger({ level: 'silent' });
const ORIGIN = 'http://127.0.0.1:3100';
const ANA = { sub: 'ana', name: 'Ana Berg', email: 'ana@example.com', groups: ['drivers', 'staff'] };
const BOB = { sub: 'bob', name: 'Bob Stone', email: 'bob@example.com', groups: ['mechanics'] };
const FINN = { sub: 'finn', name: 'Finn Holt', email: 'finn@example.com', groups: ['finance', 'staff'] };

let db: TestDatabase;
let consoleSql: Sql;
let consoleApp: ConsoleApp;
let mcp: TestServer;
type Session = Awaited<ReturnType<typeof personSession>>;
let ana: Session;
let bob: Session;

beforeAll(async () => {
  db = await createTestDatabase();
  mcp = await startTestServer(fleet, { db, logger });
  consoleSql = (await db.as('console')).sql;
  consoleApp = createConsoleApp({
    sql: consoleSql,
    logger,
    publicUrl: ORIGIN,
    oauthServers: [
      {
        name: 'fleet-demo',
        description: 'vehicles',
        resource: mcp.url.toString(),
        scopes: ['fleet:read', 'fleet:write'],
        customerBound: false,
      },
      ...discoveredServers(),
    ],
  });
  const group = (name: string, rights: { approve?: string[]; tokens?: string[] }) =>
    setGroup(db.sql, { group: name, approve: [], operate: false, tokens: [], operator: 'test', ...rights });
  await group('drivers', { tokens: ['fleet-demo:fleet:read'] });
  await group('mechanics', { tokens: ['fleet-demo'] });
  await group('finance', { approve: ['fleet-demo'] });
  ana = await personSession(consoleSql, ANA);
  bob = await personSession(consoleSql, BOB);
}, 60_000);
afterAll(async () => {
  await consoleApp?.close();
  await mcp?.close();
  await db.drop();
});

const get = (path: string, who: { cookie: string }) =>
  consoleApp.app.request(`${ORIGIN}${path}`, { headers: { host: '127.0.0.1:3100', cookie: who.cookie } });

const post = (path: string, who: { cookie: string; csrf: string }, fields: [string, string][] = []) =>
  consoleApp.app.request(`${ORIGIN}${path}`, {
    method: 'POST',
    headers: {
      host: '127.0.0.1:3100',
      cookie: who.cookie,
      origin: ORIGIN,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams([['_csrf', who.csrf], ...fields]),
  });

const issue = (who: Session, scopes: string[], server = 'fleet-demo', label = 'Cursor on my laptop') =>
  post('/my-tokens', who, [
    ['server', server],
    ['label', label],
    ...scopes.map((s): [string, string] => ['scopes', s]),
    ['expires', '30d'],
  ]);

/** The token a page shows once. */
const shownToken = (html: string) => /<pre id="token"><bdi>(bh_[^<]+)<\/bdi><\/pre>/.exec(html)?.[1];

/** Calls `who_am_i` with a real MCP client carrying `token`. */
async function whoIs(token: string) {
  const client = new Client({ name: 'my-tokens-test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(mcp.url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  const result = await client.callTool({ name: 'who_am_i', arguments: {} });
  await client.close();
  return result.structuredContent;
}

/** The HTTP status the MCP server answers a `tools/list` carrying `token` with. */
async function mcpStatus(token: string): Promise<number> {
  const res = await fetch(mcp.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  await res.body?.cancel();
  return res.status;
}

async function lastEvent(tool: string) {
  const [e] = await db.sql<
    {
      outcome: string;
      token_id: string;
      arguments: Record<string, unknown>;
      result_summary: Record<string, unknown>;
    }[]
  >`
    select outcome, token_id, arguments, result_summary from audit_events
    where method = 'console/my-tokens' and tool = ${tool} order by seq desc limit 1`;
  return e!;
}

const listed = async (who: Session) =>
  [...(await (await get('/my-tokens', who)).text()).matchAll(/<tr id="token-(\w+)"/g)].map((m) => m[1]!);

describe('issuing', () => {
  it('within the groups’ rights: shown once with the configuration, owned by the person, answering a real MCP call, audited', async () => {
    const page = await get('/my-tokens', ana);
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(html).toContain('Your groups (drivers) let you hold tokens for fleet-demo:fleet:read.');
    // Only what the rights allow is offered: fleet-demo with fleet:read, no other server or scope.
    expect(html).toContain('aria-label="Issue a token for fleet-demo"');
    expect(html).not.toContain('value="fleet:write"');
    expect(html).not.toContain('aria-label="Issue a token for admin"');

    const res = await issue(ana, ['fleet:read']);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const shown = await res.text();
    const token = shownToken(shown)!;
    expect(token).toMatch(/^bh_fleet-demo_[a-z2-9]{12}_/);
    expect(shown).toContain(
      `claude mcp add --transport http fleet-demo ${mcp.url.href} --header &quot;Authorization: Bearer ${token}&quot;`,
    );
    const id = token.split('_')[2]!;
    const [row] = await db.sql`
      select t.person_id, t.owner, t.scopes, t.created_by, t.expires_at > now() + interval '29 days' as month
      from bulkhead_tokens t where t.id = ${id}`;
    expect(row).toEqual({
      person_id: ana.personId,
      owner: 'ana@example.com',
      scopes: ['fleet:read'],
      created_by: 'my tokens: Ana Berg',
      month: true,
    });
    expect(await whoIs(token)).toEqual({
      label: 'Cursor on my laptop',
      owner: 'ana@example.com',
      scopes: ['fleet:read'],
    });
    expect(await lastEvent('issue_token')).toMatchObject({
      outcome: 'ok',
      token_id: ana.tokenId,
      arguments: {
        person: { id: ana.personId, name: 'Ana Berg', email: 'ana@example.com' },
        server: 'fleet-demo',
        scopes: ['fleet:read'],
        label: 'Cursor on my laptop',
      },
      result_summary: { token_id: id, server: 'fleet-demo' },
    });
    // Listed with its owner shown as the person's name; the secret is never shown again.
    const list = await (await get('/my-tokens', ana)).text();
    expect(list).toContain(`<tr id="token-${id}">`);
    expect(list).toContain('<td><bdi>Ana Berg</bdi></td>');
    expect(list).not.toContain(token);
  });

  it('outside the rights is refused by the database, named, audited, and nothing is issued', async () => {
    const before = await db.sql`select count(*)::int as n from bulkhead_tokens where kind = 'mcp'`;
    for (const [server, scopes, asked] of [
      ['fleet-demo', ['fleet:read', 'fleet:write'], 'fleet:read fleet:write'],
      ['admin', ['invoices:read'], 'invoices:read'],
    ] as const) {
      const res = await issue(ana, [...scopes], server);
      expect(res.status).toBe(403);
      expect(await res.text()).toContain(
        `The database refused: Ana Berg may not hold a token for ${server} with scopes ${asked}: none of their groups (drivers, staff) is mapped to --tokens ${server} (or to each of those scopes).`,
      );
      expect(await lastEvent('issue_token')).toMatchObject({
        outcome: 'forbidden',
        arguments: { person: { id: ana.personId }, server },
        result_summary: { reason: 'no_right' },
      });
    }
    expect(await db.sql`select count(*)::int as n from bulkhead_tokens where kind = 'mcp'`).toEqual(before);
    // A whole-server right allows every scope of it.
    expect(shownToken(await (await issue(bob, ['fleet:read', 'fleet:write'])).text())).toBeDefined();
  });

  it('a person whose groups carry no token right sees the sentence naming what is missing', async () => {
    const finn = await personSession(consoleSql, FINN);
    const html = await (await get('/my-tokens', finn)).text();
    expect(html).toContain(
      'You cannot issue tokens of your own: none of your groups (finance, staff) is mapped to hold tokens. An operator gives a group that right with `bulkhead groups add &lt;group&gt; --tokens &lt;server&gt;` (or --tokens &lt;server&gt;:&lt;scope&gt;, or on the console&#39;s Groups page); it counts from your next page.',
    );
    expect(html).not.toContain('<form method="post" action="/my-tokens"');
    expect((await issue(finn, ['fleet:read'])).status).toBe(403);
  });

  it('needs the session’s CSRF token, and a person: an approver token signed in by hand holds no tokens of its own', async () => {
    const res = await post('/my-tokens', { cookie: ana.cookie, csrf: 'x'.repeat(43) }, [
      ['server', 'fleet-demo'],
      ['label', 'forged'],
      ['scopes', 'fleet:read'],
      ['expires', '30d'],
    ]);
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('The form did not carry this session&#39;s security token.');
    const olga = await signedIn(db, consoleSql, 'olga@example.com', ['approvals:decide', 'tokens:manage']);
    const page = await get('/my-tokens', olga);
    expect(page.status).toBe(403);
    expect(await page.text()).toContain('My tokens is for people signed in with their company account');
    expect((await get('/', olga)).status).toBe(200);
    expect(await (await get('/', olga)).text()).not.toContain('href="/my-tokens"');
    expect(await (await get('/', ana)).text()).toContain('href="/my-tokens"');
  });
});

/** A fresh token id, as the kit makes them (12 of [a-z2-9]). */
const tokenId = () => Array.from(randomBytes(12), (b) => 'abcdefghijkmnpqrstuvwxyz23456789'[b % 32]).join('');

describe('the console’s login calling the functions itself', () => {
  const expiry = () => new Date(Date.now() + 86_400_000);
  const direct = (proof: string, server: string, scopes: string[], expires: Date | null = expiry()) =>
    consoleSql`select id from bulkhead_my_issue_token(${proof}, ${tokenId()},
      ${createHash('sha256').update(randomBytes(32)).digest()}, ${server}, 'forged', ${scopes}, null, ${expires})`;

  it('is refused a server or scope outside the rights, whatever it names, and any proof but a person’s session', async () => {
    await expect(direct(ana.sid, 'fleet-demo', ['fleet:write'])).rejects.toMatchObject({ code: '42501' });
    await expect(direct(ana.sid, 'admin', ['invoices:read'])).rejects.toMatchObject({ code: '42501' });
    // No function takes a person: another's session id is a secret the login does not have.
    await expect(direct('A'.repeat(43), 'fleet-demo', ['fleet:read'])).rejects.toThrow('no signed-in person');
    const olga = await signedIn(db, consoleSql, 'olga2@example.com', [
      'approvals:decide',
      'grants:issue',
      'tokens:manage',
    ]);
    for (const proof of [olga.sid, olga.token])
      await expect(direct(proof, 'fleet-demo', ['fleet:read'])).rejects.toThrow(
        'is an approver token, not a person signed in at the identity provider',
      );
    // A person's console identity opens nothing as a pasted token (its secret is nobody's).
    await expect(
      direct(`bh_console_${ana.tokenId}_${'A'.repeat(43)}`, 'fleet-demo', ['fleet:read']),
    ).rejects.toThrow('no signed-in person');
    await expect(direct(ana.sid, 'fleet-demo', ['fleet:read'], null)).rejects.toThrow('within a year');
    await expect(
      direct(ana.sid, 'fleet-demo', ['fleet:read'], new Date(Date.now() + 400 * 86_400_000)),
    ).rejects.toThrow('within a year');
    await expect(direct(ana.sid, 'fleet-demo', [])).rejects.toThrow('at least one scope');
    // And with everything right, it issues: the rights, not the arguments, decide.
    expect(await direct(ana.sid, 'fleet-demo', ['fleet:read'])).toHaveLength(1);
    // The rights are read at the call: the group's right taken away, the same call is refused.
    await db.sql`update bulkhead_groups set tokens = '{fleet-demo:fleet:write}' where idp_group = 'drivers'`;
    await expect(direct(ana.sid, 'fleet-demo', ['fleet:read'])).rejects.toMatchObject({ code: '42501' });
    await db.sql`update bulkhead_groups set tokens = '{fleet-demo:fleet:read}' where idp_group = 'drivers'`;
  });
});

describe('revoking', () => {
  it('one’s own token: the MCP server refuses it at once; another person’s cannot be revoked from my session', async () => {
    const mine = shownToken(await (await issue(ana, ['fleet:read'], 'fleet-demo', 'Claude Code')).text())!;
    const bobs = shownToken(await (await issue(bob, ['fleet:write'], 'fleet-demo', 'Bob’s Cursor')).text())!;
    const [mineId, bobsId] = [mine.split('_')[2]!, bobs.split('_')[2]!];
    expect(await mcpStatus(mine)).toBe(200);

    const refused = await post(`/my-tokens/${bobsId}/revoke`, ana);
    expect(refused.status).toBe(404);
    expect(await refused.text()).toContain(
      `No token of yours has the id ${bobsId}: you revoke your own tokens only.`,
    );
    expect(await lastEvent('revoke_token')).toMatchObject({
      outcome: 'bad_request',
      arguments: { person: { id: ana.personId }, token_id: bobsId },
      result_summary: { reason: 'not_own_token' },
    });
    expect(await consoleSql`select * from bulkhead_my_revoke_token(${ana.sid}, ${bobsId})`).toEqual([]);
    expect(await mcpStatus(bobs)).toBe(200);
    expect(await listed(bob)).toContain(bobsId);

    const done = await post(`/my-tokens/${mineId}/revoke`, ana);
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`/my-tokens?revoked=${mineId}`);
    expect(await mcpStatus(mine)).toBe(401);
    expect(await lastEvent('revoke_token')).toMatchObject({
      outcome: 'ok',
      token_id: ana.tokenId,
      arguments: { person: { id: ana.personId, name: 'Ana Berg' }, token_id: mineId },
      result_summary: { revoked: true, server: 'fleet-demo', label: 'Claude Code' },
    });
    const page = await (await get(`/my-tokens?revoked=${mineId}`, ana)).text();
    expect(page).toContain(`Token ${mineId} is revoked: its server refuses it from now on.`);
    expect(await listed(ana)).not.toContain(mineId);
  });
});

describe('separation of duties', () => {
  it('compares persons where both sides are persons: the same person is refused, another of the same name and e-mail approves; a hand-issued approver token of that name is refused', async () => {
    const sam = await personSession(consoleSql, {
      sub: 'sam-1',
      name: 'Sam Meyer',
      email: 'sam@example.com',
      groups: ['mechanics', 'finance'],
    });
    // A newcomer given the same name and e-mail address: another person at the IdP (another `sub`).
    const newcomer = await personSession(consoleSql, {
      sub: 'sam-2',
      name: 'Sam Meyer',
      email: 'sam@example.com',
      groups: ['finance'],
    });
    const token = shownToken(await (await issue(sam, ['fleet:read'], 'fleet-demo', 'Sam’s Cursor')).text())!;
    const id = 'ap_mytokenssame';
    await db.sql`
      insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
        expires_at, request_id, requested_by_token_id)
      values (${id}, 'fleet-demo', 'who_am_i', '{}', '{}', ${argumentsHash({})}, 'Who am I', now() + interval '1 hour',
        'r', ${token.split('_')[2]!})`;
    const audit = createAuditWriter(consoleSql);
    const decide = (proof: string) =>
      decideApproval(consoleSql, audit, { id, decision: 'approve', proof, via: 'console' });
    await expect(decide(sam.sid)).rejects.toThrow(
      `approval ${id} was requested with a token issued to sam@example.com, who may not approve it too`,
    );
    // A token issued by hand has no person: its name is compared, as before.
    const byHand = await signedIn(db, consoleSql, 'Sam@Example.com', ['approvals:decide']);
    await expect(decide(byHand.sid)).rejects.toThrow('who may not approve it too');
    const decided = await decide(newcomer.sid);
    expect(decided.decidedByTokenId).toBe(newcomer.tokenId);
  });
});
