import { serve, type ServerType } from '@hono/node-server';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAuditWriter, sealLog, type AuditEventInput } from '@bulkhead/audit';
import { createLogger, workspaceRoot } from '@bulkhead/core';
import { issueToken } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsoleApp, type ConsoleApp } from '../../app.tsx';

const KEY = 'audit-key-of-the-console-test-0123456789';
const TRACE = '0af7651916cd43dd8448eb211c80319c';
const BULK = 2100;
const logger = createLogger({ level: 'silent' });

let db: TestDatabase;
let consoleSql: Sql;
let consoleApp: ConsoleApp;
let http: ServerType;
let base: string;
let dataDir: string;
let operatorToken: string;
let operatorId: string;
let approverToken: string;
let approverId: string;
/** The seeded events by name, each its sequence number. */
const seq: Record<string, number> = {};
/** Every bulk event's number, oldest first. */
let bulk: number[];
/** A time after e1 and before e2, and one after the last seeded event (before anything the tests write). */
let split: Date;
let seeded: Date;

/** A millisecond past event `n`'s time, once the database's clock has passed it: what follows is later. */
async function after(n: number): Promise<Date> {
  const [row] = await db.sql<{ t: Date }[]>`
    select date_trunc('milliseconds', at) + interval '1 millisecond' as t from audit_events where seq = ${n}`;
  const deadline = Date.now() + 5_000;
  while (!(await db.sql<{ ok: boolean }[]>`select clock_timestamp() >= ${row!.t} as ok`)[0]!.ok) {
    if (Date.now() > deadline) throw new Error('the database clock did not move');
    await sleep(2);
  }
  return row!.t;
}

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'bulkhead-console-audit-'));
  const approver = (label: string, owner: string, scopes: string[]) =>
    issueToken(db.sql, {
      kind: 'approver',
      server: 'console',
      label,
      scopes,
      owner,
      expiresAt: null,
      createdBy: 'test',
    });
  const operator = await approver('Olga (operator)', 'olga@example.com', [
    'approvals:decide',
    'tokens:manage',
  ]);
  const plain = await approver('Ana Berg', 'ana@example.com', ['approvals:decide']);
  [operatorToken, operatorId, approverToken, approverId] = [
    operator.token,
    operator.record.id,
    plain.token,
    plain.record.id,
  ];
  // Two of Ana's MCP tokens (her name written two ways: one person) and one of Bob's.
  const mcp = (label: string, owner: string) =>
    issueToken(db.sql, { server: 'admin', label, scopes: [], owner, expiresAt: null, createdBy: 'test' });
  const ana1 = (await mcp('Claude on Ana’s laptop', ' Ana@Example.com')).record.id;
  const ana2 = (await mcp('Ana’s agent', 'ana@example.com')).record.id;
  const bob = (await mcp('Bob’s agent', 'bob@example.com')).record.id;

  const audit = createAuditWriter(db.sql);
  const append = async (name: string, e: Partial<AuditEventInput>) => {
    const { id } = await audit.append({
      server: 'admin',
      method: 'tools/call',
      outcome: 'ok',
      requestId: name,
      durationMs: 7,
      ...e,
    });
    const [row] = await db.sql<{ seq: string }[]>`select seq from audit_events where id = ${id}`;
    seq[name] = Number(row!.seq);
  };
  await Promise.all(
    Array.from({ length: BULK }, (_, i) =>
      audit.append({
        server: 'bulk',
        method: 'tools/call',
        tool: 'list_items',
        outcome: 'ok',
        requestId: `bulk-${i}`,
        durationMs: i % 50,
        arguments: { page: i, note: 'a "quoted", comma\nand a line break' },
      }),
    ),
  );
  bulk = (
    await db.sql<{ seq: string }[]>`select seq from audit_events where server = 'bulk' order by seq`
  ).map((r) => Number(r.seq));
  await append('e1', {
    tool: 'get_ticket',
    tokenId: ana1,
    tokenLabel: 'Claude on Ana’s laptop',
    arguments: { key: 'T-1', note: 'pay\u202Elive' },
  });
  split = await after(seq.e1!);
  await append('e2', {
    server: 'customer',
    tool: 'send_invoice',
    outcome: 'pending_approval',
    tokenId: bob,
    tokenLabel: 'Bob’s agent',
    approvalId: 'apr-audit-1',
    arguments: { invoice: 'INV-7', memo: 'comma, "quoted"' },
    resultSummary: { approval_id: 'apr-audit-1' },
  });
  await append('e3', {
    tool: 'delete_user',
    outcome: 'forbidden',
    tokenId: ana2,
    tokenLabel: 'Ana’s agent',
    traceId: TRACE,
  });
  await append('e4', {
    server: 'console',
    method: 'console/operator',
    tool: 'revoke_token',
    arguments: { person: 'ANA@example.com ', source: '127.0.0.1' },
  });
  await append('e5', {
    server: 'dev-knowledge',
    tool: 'search_docs',
    outcome: 'tool_error',
    tokenId: bob,
    tokenLabel: 'Bob’s agent',
  });
  seeded = await after(seq.e5!);

  consoleSql = (await db.as('console')).sql;
  consoleApp = createConsoleApp({
    sql: consoleSql,
    logger,
    publicUrl: 'http://127.0.0.1',
    signInPolicy: { failures: 1000, windowSeconds: 60 },
    auditKey: KEY,
  });
  http = serve({ fetch: consoleApp.app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise<void>((resolve) => http.once('listening', resolve));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => http.close(resolve));
  await consoleApp.close();
  await db.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Signs in through the form, as a browser would; returns the session cookie. */
async function signIn(token: string): Promise<string> {
  const form = await fetch(`${base}/login`);
  const login = /bh_login=([^;]+)/.exec(form.headers.getSetCookie().join(';'))![1]!;
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
  const res = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: `bh_login=${login}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, token }),
  });
  expect(res.status).toBe(303);
  return `bh_session=${/bh_session=([^;]+)/.exec(res.headers.getSetCookie().join(';'))![1]!}`;
}

let operatorCookie: string | undefined;
async function asOperator(path: string): Promise<Response> {
  operatorCookie ??= await signIn(operatorToken);
  return fetch(`${base}${path}`, { headers: { cookie: operatorCookie } });
}

/** The search page for `query`: the events it lists, in order, and its Older link. */
async function search(
  query: Record<string, string>,
): Promise<{ seqs: number[]; older?: string; html: string }> {
  const res = await asOperator(`/operator/audit?${new URLSearchParams(query)}`);
  expect(res.status).toBe(200);
  const html = await res.text();
  const seqs = [...html.matchAll(/href="\/operator\/audit\/events\/(\d+)"/g)].map((m) => Number(m[1]));
  const older = /<a href="([^"]+)" rel="next">Older<\/a>/.exec(html)?.[1]?.replaceAll('&amp;', '&');
  return { seqs, html, ...(older ? { older } : {}) };
}

/** Which of the five seeded events a search lists. */
async function seededFound(query: Record<string, string>): Promise<string[]> {
  const { seqs } = await search(query);
  return Object.keys(seq).filter((name) => seqs.includes(seq[name]!));
}

/** `bulkhead audit export` as a person runs it: the CLI's binary, its stdout as bytes. */
function cliExport(args: string[]): Promise<Buffer> {
  const bin = join(workspaceRoot(), 'packages/cli/bin/bulkhead.mjs');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'audit', 'export', ...args], {
      env: { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL: db.url, BULKHEAD_DATA_DIR: dataDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`bulkhead audit export: ${code} ${err}`)),
    );
  });
}

describe('the audit log for operators', () => {
  it('finds each seeded event by each filter alone, and not the others', async () => {
    expect(await seededFound({})).toEqual(['e1', 'e2', 'e3', 'e4', 'e5']);
    expect(await seededFound({ from: split.toISOString() })).toEqual(['e2', 'e3', 'e4', 'e5']);
    // A datetime-local value, read as UTC; the end is exclusive.
    expect(await seededFound({ to: split.toISOString().slice(0, 23) })).toEqual(['e1']);
    expect(await seededFound({ server: 'customer' })).toEqual(['e2']);
    expect(await seededFound({ tool: 'delete_user' })).toEqual(['e3']);
    expect(await seededFound({ outcome: 'tool_error' })).toEqual(['e5']);
    expect(await seededFound({ token: (await tokenOf('e2'))! })).toEqual(['e2', 'e5']);
    // Ana's two tokens (her name written two ways) and the console's event that names her.
    expect(await seededFound({ person: 'ana@EXAMPLE.com' })).toEqual(['e1', 'e3', 'e4']);
    expect(await seededFound({ person: 'bob@example.com' })).toEqual(['e2', 'e5']);
    expect(await seededFound({ approval: 'apr-audit-1' })).toEqual(['e2']);
    expect(await seededFound({ trace: TRACE })).toEqual(['e3']);
    expect(await seededFound({ person: 'nobody@example.com' })).toEqual([]);

    const row = (await search({ server: 'customer' })).html;
    expect(row).toContain(`<a href="/operator/audit/events/${seq.e2}">#${seq.e2}</a>`);
    expect(row).toMatch(
      /<code><bdi>send_invoice<\/bdi><\/code><\/td><td data-label="Outcome"><bdi>pending_approval<\/bdi><\/td><td data-label="Duration">7 ms<\/td><td data-label="Token"><bdi>Bob’s agent<\/bdi><\/td>/,
    );
    const bad = await asOperator('/operator/audit?outcome=fine&from=yesterday');
    expect(bad.status).toBe(400);
    const text = await bad.text();
    expect(text).toContain('Outcome: “fine” is not an outcome.');
    expect(text).toContain('From: “yesterday” is not a time');
  });

  it('pages newest first, 50 a page, by sequence number', async () => {
    const newest = [...bulk].reverse();
    const first = await search({ server: 'bulk' });
    expect(first.seqs).toEqual(newest.slice(0, 50));
    expect(first.older).toContain(`before=${newest[49]}`);
    const second = await search(Object.fromEntries(new URLSearchParams(first.older!.split('?')[1])));
    expect(second.seqs).toEqual(newest.slice(50, 100));
    expect(second.html).toContain('>Newest</a>');
    const last = await search({ server: 'bulk', before: String(bulk[30]) });
    expect(last.seqs).toEqual(bulk.slice(0, 30).reverse());
    expect(last.older).toBeUndefined();
  });

  it('shows every field of an event, its text shown for what it is', async () => {
    const res = await asOperator(`/operator/audit/events/${seq.e2}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    for (const column of ['seq', 'id', 'at', 'server', 'db_role', 'token_id', 'approval_id', 'trace_id'])
      expect(html).toContain(`<dt><code>${column}</code></dt>`);
    expect(html).toContain('<dd><bdi>apr-audit-1</bdi></dd>');
    expect(html).toContain('&quot;memo&quot;: &quot;comma, \\&quot;quoted\\&quot;&quot;');
    const e1 = await (await asOperator(`/operator/audit/events/${seq.e1}`)).text();
    expect(e1).toContain('pay<mark class="hidden">[U+202E]</mark>live');
    expect((await asOperator('/operator/audit/events/999999')).status).toBe(404);
  });

  it('tells an unsealed event, then one sealed and verified with the key, and a tampered one', async () => {
    /** The seal sentence of event `n`'s page, in this console or at `other` (as a bearer request). */
    const status = async (n: number, other?: string) => {
      const res = other
        ? await fetch(`${other}/operator/audit/events/${n}`, {
            headers: { Authorization: `Bearer ${operatorToken}` },
          })
        : await asOperator(`/operator/audit/events/${n}`);
      return /<p[^>]* id="seal-status">This event is ([^<]+)<\/p>/.exec(await res.text())![1]!;
    };
    expect(await status(seq.e1!)).toMatch(/^in the unsealed tail \(not sealed yet, age \d+ s\)\.$/);
    const pass = await sealLog(db.sql, KEY);
    const seal = pass.seals.find((s) => s.seqs.includes(seq.e1!))!;
    const sealedAt = `${seal.sealedAt.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
    expect(await status(seq.e1!)).toBe(
      `sealed by seal ${seal.sealNo} (sealed at ${sealedAt}) and verified: its digest is the one sealed, and the seal matches its MAC.`,
    );
    const keyless = createConsoleApp({ sql: consoleSql, logger, publicUrl: 'http://127.0.0.1' });
    const keylessHttp = serve({ fetch: keyless.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((resolve) => keylessHttp.once('listening', resolve));
    try {
      expect(await status(seq.e1!, `http://127.0.0.1:${(keylessHttp.address() as AddressInfo).port}`)).toBe(
        `sealed by seal ${seal.sealNo} (sealed at ${sealedAt}); not verified here: the console holds no audit key (BULKHEAD_AUDIT_KEY). bulkhead audit verify checks it.`,
      );
    } finally {
      await new Promise((resolve) => keylessHttp.close(resolve));
      await keyless.close();
    }

    await db.sql.begin(async (tx) => {
      await tx`alter table audit_events disable trigger audit_events_append_only_row`;
      await tx`update audit_events set duration_ms = 999 where seq = ${seq.e3!}`;
      await tx`alter table audit_events enable trigger audit_events_append_only_row`;
    });
    expect(await status(seq.e3!)).toMatch(
      new RegExp(`^sealed by seal ${seal.sealNo}, digest does not match: tampered\\.`),
    );
    expect(await status(seq.e1!)).toMatch(/and verified/);
  });

  it('exports a search in exactly the bytes of bulkhead audit export, streamed, and audits the export', async () => {
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const bob = (await tokenOf('e2'))!;
    const cases: { query: Record<string, string>; cli: string[]; events: number }[] = [
      // More than two batches of the console's, to the end of the seeded events.
      {
        query: { from, to: seeded.toISOString() },
        cli: ['--since', from, '--until', seeded.toISOString()],
        events: BULK + 5,
      },
      { query: { from, server: 'admin' }, cli: ['--since', from, '--server', 'admin'], events: 2 },
      {
        query: { from, token: bob, outcome: 'pending_approval' },
        cli: ['--since', from, '--token', bob, '--outcome', 'pending_approval'],
        events: 1,
      },
    ];
    for (const { query, cli, events } of cases)
      for (const format of ['jsonl', 'csv']) {
        const res = await asOperator(`/operator/audit/export?${new URLSearchParams({ ...query, format })}`);
        expect(res.status).toBe(200);
        expect(res.headers.get('content-disposition')).toMatch(
          new RegExp(`^attachment; filename="bulkhead-audit-\\d{8}T\\d{6}Z\\.${format}"$`),
        );
        expect(res.headers.get('content-type')).toBe(
          format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
        );
        const body = Buffer.from(await res.arrayBuffer());
        expect(body.equals(await cliExport([...cli, '--format', format]))).toBe(true);
        // A CSV cell may hold a line break (quoted); JSON Lines never does.
        if (format === 'jsonl') expect(body.toString().split('\n')).toHaveLength(events + 1);
        else expect(body.toString()).toMatch(/^seq,id,at,server,chain_seq,/);
      }
    const whole = await (
      await asOperator(
        `/operator/audit/export?${new URLSearchParams({ from, to: seeded.toISOString(), format: 'jsonl' })}`,
      )
    ).text();
    expect(whole.trimEnd().split('\n')).toHaveLength(BULK + 5);
    expect(JSON.parse(whole.split('\n')[BULK + 1]!)).toMatchObject({
      seq: seq.e2,
      server: 'customer',
      approval_id: 'apr-audit-1',
      chain_seq: null,
    });

    const [audited] = await db.sql<{ n: number; args: Record<string, unknown> }[]>`
      select count(*)::int as n, (array_agg(arguments order by seq desc))[1] as args from audit_events
      where server = 'console' and tool = 'audit_export' and token_id = ${operatorId}`;
    expect(audited!.n).toBe(cases.length * 2 + 1);
    expect(audited!.args).toMatchObject({
      person: 'olga@example.com',
      format: 'jsonl',
      search: { from, to: seeded.toISOString() },
    });

    const page = (await search({ server: 'admin', from })).html.replaceAll('&amp;', '&');
    expect(page).toContain(
      `href="/operator/audit/export?${new URLSearchParams({ from, server: 'admin', format: 'csv' })}">Export CSV</a>`,
    );
    expect(page).toContain(
      `href="/operator/audit/export?${new URLSearchParams({ from, server: 'admin', format: 'jsonl' })}">Export JSON Lines</a>`,
    );
    expect((await asOperator('/operator/audit/export?format=xml')).status).toBe(400);
    // Each case runs the CLI as a process of its own: minutes on a loaded machine, not a speed check.
  }, 120_000);

  it('is closed to an approver who is no operator, at the page and in the database', async () => {
    const cookie = await signIn(approverToken);
    for (const path of [
      '/operator/audit',
      `/operator/audit/events/${seq.e1}`,
      '/operator/audit/export?format=jsonl',
    ]) {
      const res = await fetch(`${base}${path}`, { headers: { cookie } });
      expect(res.status).toBe(403);
      expect(await res.text()).toContain('Operators only');
    }
    // The console's role sees only the events of approvals, unless an operator proved themselves in the
    // transaction; naming an operator's token id in the old setting opens nothing.
    const visible = (named: { setting?: string; proof?: string }) =>
      consoleSql.begin(async (tx) => {
        if (named.setting) await tx`select set_config('bulkhead.operator', ${named.setting}, true)`;
        if (named.proof) await tx`select 1 from bulkhead_console_prove(${named.proof})`;
        const [row] = await tx<{ all: number; approvals: number }[]>`
          select count(*)::int as all, count(approval_id)::int as approvals from audit_events`;
        return row!;
      });
    const [total] = await db.sql<{ n: number }[]>`select count(*)::int as n from audit_events`;
    for (const named of [{}, { proof: approverToken }, { setting: operatorId }, { setting: approverId }]) {
      const seen = await visible(named);
      expect(seen.all).toBe(seen.approvals);
      expect(seen.all).toBeGreaterThan(0);
    }
    expect((await visible({ proof: operatorToken })).all).toBeGreaterThanOrEqual(total!.n);
  });
});

async function tokenOf(name: string): Promise<string | null> {
  const [row] = await db.sql<
    { token_id: string | null }[]
  >`select token_id from audit_events where seq = ${seq[name]!}`;
  return row!.token_id;
}
