import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAuditWriter } from '@bulkhead/audit';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../run-cli.ts';

const cliMain = fileURLToPath(new URL('../main.ts', import.meta.url));

let db: TestDatabase;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'bulkhead-audit-cli-'));
  env = { DATABASE_URL: db.url, BULKHEAD_DATA_DIR: dir };
  const audit = createAuditWriter(db.sql);
  for (let i = 1; i <= 6; i++) {
    await audit.append({
      server: i % 2 ? 'admin' : 'customer',
      method: 'tools/call',
      tool: i === 3 ? 'send_invoice' : 'get_ticket',
      outcome: i === 3 ? 'pending_approval' : 'ok',
      requestId: `req-${i}`,
      durationMs: i,
      tokenId: 'tok123',
      tokenLabel: 'Claude on Ana’s laptop',
      arguments: { key: `T-100${i}`, note: 'comma, "quoted"' },
    });
  }
});
afterAll(async () => {
  await db.drop();
  await rm(dir, { recursive: true, force: true });
});

describe('bulkhead audit', () => {
  it('tails with filters, readable or as JSON', async () => {
    const readable = await runCli(['audit', 'tail', '--server', 'admin'], env);
    expect(readable.code).toBe(0);
    const lines = readable.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(
      /#3 {2}admin {2}send_invoice {2}pending_approval {2}3ms {2}tok123 "Claude on Ana’s laptop" \{"key":"T-1003"/,
    );
    const json = await runCli(['audit', 'tail', '--outcome', 'pending_approval', '--json'], env);
    const events = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.map((e) => [e.seq, e.tool, e.outcome])).toEqual([[3, 'send_invoice', 'pending_approval']]);
    const bad = await runCli(['audit', 'tail', '--outcome', 'fine'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--outcome: "fine" is not an outcome; one of: ok, tool_error');
  });

  it('exports JSON Lines and CSV, streaming to a file', async () => {
    const jsonl = join(dir, 'out.jsonl');
    const run = await runCli(
      ['audit', 'export', '--since', '1d', '--format', 'jsonl', '--output', jsonl],
      env,
    );
    expect(run.code).toBe(0);
    expect(run.stderr).toContain(`Exported 6 events to ${jsonl}.`);
    const rows = (await readFile(jsonl, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    const csv = await runCli(
      ['audit', 'export', '--since', '2020-01-01', '--format', 'csv', '--server', 'customer'],
      env,
    );
    const csvLines = csv.stdout.trim().split('\n');
    const columns =
      'seq,id,at,server,chain_seq,token_id,token_label,client_name,client_version,method,tool,arguments,outcome,result_summary,duration_ms,request_id,approval_id,injection_suspected,prev_hash,hash,db_role,trace_id';
    expect(csvLines[0]).toBe(columns);
    expect(Object.keys(rows[0])).toEqual(columns.split(','));
    expect(rows[0]).toEqual({
      seq: 1,
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      server: 'admin',
      chain_seq: null,
      token_id: 'tok123',
      token_label: 'Claude on Ana’s laptop',
      client_name: null,
      client_version: null,
      method: 'tools/call',
      tool: 'get_ticket',
      arguments: { key: 'T-1001', note: 'comma, "quoted"' },
      outcome: 'ok',
      result_summary: null,
      duration_ms: 1,
      request_id: 'req-1',
      approval_id: null,
      injection_suspected: false,
      prev_hash: null,
      hash: null,
      db_role: expect.any(String),
      trace_id: null,
    });
    expect(csvLines).toHaveLength(4);
    expect(csvLines[1]).toContain(',"{""key"":""T-1002"",""note"":""comma, \\""quoted\\""""}",ok,');
    expect((await runCli(['audit', 'export', '--format', 'csv'], env)).stderr).toContain(
      '--since is required',
    );
  });

  it('seals, verifies, names every break, and prunes with a checkpoint that still verifies', async () => {
    const nothing = await runCli(['audit', 'verify'], { ...env, BULKHEAD_DATA_DIR: join(dir, 'no-key') });
    expect(nothing).toMatchObject({ code: 1 });
    expect(nothing.stderr).toContain('no audit key');

    const sealed = await runCli(['audit', 'seal', '--json'], env);
    expect(sealed.code).toBe(0);
    expect(JSON.parse(sealed.stdout)).toEqual({ elected: true, seals: 1, events: 6, sealed_through: 6 });
    expect((await runCli(['audit', 'seal'], env)).stdout).toBe('Nothing new to seal.\n');

    const ok = await runCli(['audit', 'verify'], env);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(
      /^Sealed log: 1 seal up to event #6; newest seal \d+ s ago\.\nadmin: ok, 3 sealed events present\ncustomer: ok, 3 sealed events present\nUnsealed tail: none\.\n$/,
    );

    await db.sql`alter table audit_events disable trigger audit_events_append_only_row`;
    await db.sql`update audit_events set duration_ms = 999 where seq = 4`;
    await db.sql`delete from audit_events where seq = 5`;
    const broken = await runCli(['audit', 'verify', '--json'], env);
    expect(broken.code).toBe(1);
    const report = JSON.parse(broken.stdout);
    expect(report.breaks.map((b: { kind: string; seq: number }) => [b.kind, b.seq])).toEqual([
      ['event_changed', 4],
      ['event_missing', 5],
    ]);
    expect(report.servers).toEqual([
      { server: 'admin', sealed: 3, present: 2 },
      { server: 'customer', sealed: 3, present: 3 },
    ]);
    const text = await runCli(['audit', 'verify', '--server', 'customer'], env);
    expect(text.stdout).toContain('BROKEN seal 1: event 4 (customer, ');
    expect(text.stdout).toContain('BROKEN seal 1: event 5, sealed in seal 1, is missing');
    await db.sql`update audit_events set duration_ms = 4 where seq = 4`;
    await db.sql`alter table audit_events enable trigger audit_events_append_only_row`;

    const pruned = await runCli(
      ['audit', 'prune', '--before', new Date(Date.now() + 86_400_000).toISOString(), '--json'],
      env,
    );
    expect(pruned.code).toBe(2);
    expect(pruned.stderr).toContain('--before lies in the future');

    // Prune everything sealed until now: the seal with the deleted event goes, and what remains verifies.
    await createAuditWriter(db.sql).append({
      server: 'admin',
      method: 'tools/call',
      outcome: 'ok',
      requestId: 'later',
      durationMs: 1,
    });
    const real = await runCli(['audit', 'prune', '--before', new Date().toISOString(), '--json'], env);
    expect(real.code).toBe(0);
    expect(JSON.parse(real.stdout)).toEqual({ removed_events: 5, removed_seals: 1, checkpoint_seal: 1 });
    expect((await runCli(['audit', 'seal'], env)).stdout).toBe('Sealed 1 event in 1 seal, up to event #7.\n');
    const after = await runCli(['audit', 'verify'], env);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain('(after the prune checkpoint at seal 1)');
    expect(after.stdout).toContain('admin: ok, 1 sealed events present');

    await db.sql`update audit_prune_checkpoint set signature = repeat('0', 64)`;
    const forged = await runCli(['audit', 'verify', '--server', 'admin'], env);
    expect(forged.code).toBe(1);
    expect(forged.stdout).toContain(
      'BROKEN seal 1: the prune checkpoint is not signed with this key (forged, or another key)',
    );
    // Each case runs the CLI as a process of its own: minutes on a loaded machine, not a speed check.
  }, 120_000);

  it('keeps an anchor outside the database that catches a deleted tail of seals', async () => {
    const own = await createTestDatabase();
    const ownEnv = { DATABASE_URL: own.url, BULKHEAD_DATA_DIR: dir };
    const anchor = join(dir, 'anchor.json');
    try {
      const audit = createAuditWriter(own.sql);
      await audit.append({
        server: 'admin',
        method: 'tools/call',
        outcome: 'ok',
        requestId: 'a',
        durationMs: 1,
      });
      await runCli(['audit', 'seal'], ownEnv);
      await audit.append({
        server: 'admin',
        method: 'tools/call',
        outcome: 'ok',
        requestId: 'b',
        durationMs: 1,
      });
      await runCli(['audit', 'seal'], ownEnv);
      expect((await runCli(['audit', 'verify', '--anchor', anchor], ownEnv)).code).toBe(0);
      expect(JSON.parse(await readFile(anchor, 'utf8'))).toMatchObject({ seal_no: 2 });
      await own.sql.begin(async (tx) => {
        await tx`alter table audit_seals disable trigger user`;
        await tx`alter table audit_events disable trigger user`;
        await tx`delete from audit_events where request_id = 'b'`;
        await tx`delete from audit_seals where seal_no = 2`;
      });
      // The count of seals made shows it without the anchor too.
      const counted = await runCli(['audit', 'verify'], ownEnv);
      expect(counted.code).toBe(1);
      expect(counted.stdout).toContain(
        'BROKEN seal 2: seals up to 2 were made, but the log ends at seal 1: seals were deleted from the end',
      );
      const caught = await runCli(['audit', 'verify', '--anchor', anchor], ownEnv);
      expect(caught.code).toBe(1);
      expect(caught.stdout).toContain(
        'BROKEN seal 2: the anchor records seal 2, but the log ends at seal 1: seals were deleted from the end',
      );
      // The anchor keeps the seal it recorded, with this run's breaks: the next run fails the same way.
      expect(JSON.parse(await readFile(anchor, 'utf8'))).toMatchObject({
        seal_no: 2,
        ok: false,
        breaks: [
          { kind: 'seal_missing', seal_no: 2, seq: null },
          { kind: 'anchor_mismatch', seal_no: 2, seq: null },
        ],
      });
      expect((await runCli(['audit', 'verify', '--anchor', anchor], ownEnv)).stdout).toContain(
        'BROKEN seal 2: the anchor records seal 2',
      );
    } finally {
      await own.drop();
    }
  });
});

describe('bulkhead audit as the sealer, and its anchor after a broken run', () => {
  it('seals and verifies as the sealer’s own role, and records the anchor after a failing run too', async () => {
    const own = await createTestDatabase();
    const sealerEnv = {
      DATABASE_URL: (await own.as('sealer')).url,
      BULKHEAD_DATA_DIR: dir,
      BULKHEAD_MIGRATE: 'false',
    };
    const anchor = join(dir, 'anchor-broken.json');
    const append = (requestId: string) =>
      createAuditWriter(own.sql).append({
        server: 'admin',
        method: 'tools/call',
        outcome: 'ok',
        requestId,
        durationMs: 1,
      });
    try {
      await append('a');
      const sealed = await runCli(['audit', 'seal', '--json'], sealerEnv);
      expect([sealed.code, sealed.stderr]).toEqual([0, '']);
      expect(JSON.parse(sealed.stdout)).toEqual({ elected: true, seals: 1, events: 1, sealed_through: 1 });
      await own.sql.begin(async (tx) => {
        await tx`alter table audit_events disable trigger user`;
        await tx`update audit_events set duration_ms = 999 where request_id = 'a'`;
        await tx`alter table audit_events enable trigger user`;
      });
      const broken = await runCli(['audit', 'verify', '--anchor', anchor], sealerEnv);
      expect(broken.code).toBe(1);
      expect(JSON.parse(await readFile(anchor, 'utf8'))).toMatchObject({
        seal_no: 1,
        ok: false,
        breaks: [{ kind: 'event_changed', seal_no: 1, seq: 1 }],
        more_breaks: 0,
      });
      await append('b');
      await runCli(['audit', 'seal'], sealerEnv);
      expect((await runCli(['audit', 'verify', '--anchor', anchor], sealerEnv)).code).toBe(1);
      expect(JSON.parse(await readFile(anchor, 'utf8'))).toMatchObject({ seal_no: 2 });
      // Someone who knows the count of seals made sets it back too: the anchor still holds seal 2.
      await own.sql.begin(async (tx) => {
        await tx`alter table audit_seals disable trigger user`;
        await tx`alter table audit_events disable trigger user`;
        await tx`delete from audit_events where request_id = 'b'`;
        await tx`delete from audit_seals where seal_no = 2`;
        await tx`select setval('audit_seals_made', 1)`;
      });
      const caught = await runCli(['audit', 'verify', '--anchor', anchor], sealerEnv);
      expect(caught.stdout).toContain(
        'BROKEN seal 2: the anchor records seal 2, but the log ends at seal 1: seals were deleted from the end',
      );
      expect(caught.stdout).not.toContain('seals up to');
    } finally {
      await own.drop();
    }
  });
});

describe('bulkhead audit export at volume', () => {
  it('streams 60,000 events (~70 MB of JSON) in a process limited to a 64 MB heap', async () => {
    const big = await createTestDatabase();
    try {
      await big.sql`
        insert into audit_events (id, server, method, tool, arguments, outcome, duration_ms, request_id)
        select gen_random_uuid(), 'admin', 'tools/call', 'get_ticket',
          jsonb_build_object('key', 'T-1001', 'padding', repeat('x', 1000)), 'ok', 1, 'r' || i
        from generate_series(1, 60000) as i`;
      const file = join(dir, 'big.jsonl');
      const run = await runCli(['audit', 'export', '--since', '2h', '--output', file], {
        DATABASE_URL: big.url,
        BULKHEAD_DATA_DIR: dir,
        NODE_OPTIONS: '--max-old-space-size=64',
      });
      expect(run.stderr).toContain(`Exported 60000 events to ${file}.`);
      expect(run.code).toBe(0);
      const text = await readFile(file, 'utf8');
      expect(text.length).toBeGreaterThan(60_000_000);
      expect(text.trimEnd().split('\n')).toHaveLength(60000);
    } finally {
      await big.drop();
    }
  }, 120_000);
});

describe('bulkhead audit tail --follow', () => {
  it('prints events as they are committed, including one committed out of sequence order, and stops on Ctrl-C', async () => {
    const live = await createTestDatabase();
    try {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', cliMain, 'audit', 'tail', '--follow', '--json'],
        {
          env: { ...process.env, DATABASE_URL: live.url, BULKHEAD_DATA_DIR: dir },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      // Whole lines only: on a busy machine a read can end in the middle of one.
      const lines = () =>
        out
          .slice(0, out.lastIndexOf('\n') + 1)
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { request_id: string });
      const waitFor = async (n: number) => {
        for (let i = 0; i < 100 && lines().length < n; i++) await new Promise((r) => setTimeout(r, 100));
      };
      await new Promise((r) => setTimeout(r, 1500));
      const audit = createAuditWriter(live.sql);
      // Hold one insert open so that a later sequence number commits first.
      const slow = live.sql.begin(async (tx) => {
        await tx`insert into audit_events (id, server, method, outcome, duration_ms, request_id)
          values (gen_random_uuid(), 'other', 'tools/call', 'ok', 1, 'slow')`;
        await new Promise((r) => setTimeout(r, 1200));
      });
      await new Promise((r) => setTimeout(r, 100));
      await audit.append({
        server: 'admin',
        method: 'tools/call',
        outcome: 'ok',
        requestId: 'fast',
        durationMs: 1,
      });
      await slow;
      await waitFor(2);
      expect(
        lines()
          .map((l) => l.request_id)
          .sort(),
      ).toEqual(['fast', 'slow']);
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      await live.drop();
    }
  }, 60_000);
});

describe('bulkhead audit tail and terminal safety', () => {
  it('stores a tool name without its control characters, and shows those in arguments instead of sending them', async () => {
    const own = await createTestDatabase();
    try {
      await createAuditWriter(own.sql).append({
        server: 'admin',
        method: 'tools/call',
        tool: 'x\u001b[2J\u001b[31mFAKE',
        outcome: 'unknown_tool',
        requestId: 'r',
        durationMs: 1,
        clientName: 'evil\u001b]0;title\u0007',
        arguments: { note: 'bell\u0007' },
      });
      const run = await runCli(['audit', 'tail'], { DATABASE_URL: own.url, BULKHEAD_DATA_DIR: dir });
      expect(run.code).toBe(0);
      for (const c of ['\u0007', '\u001b']) expect(run.stdout).not.toContain(c);
      // Control characters never reach a name in the log; in free text they are shown, never sent.
      expect(run.stdout).toContain('x\ufffd[2J\ufffd[31mFAKE');
      expect(run.stdout).toContain('evil\ufffd]0;title\ufffd');
      expect(run.stdout).toContain('"bell\\u0007"');
      const json = await runCli(['audit', 'tail', '--json'], {
        DATABASE_URL: own.url,
        BULKHEAD_DATA_DIR: dir,
      });
      for (const c of ['\u0007', '\u001b']) expect(json.stdout).not.toContain(c);
      expect(JSON.parse(json.stdout).tool).toBe('x\ufffd[2J\ufffd[31mFAKE');
      expect(JSON.parse(json.stdout).arguments).toEqual({ note: 'bell\u0007' });
    } finally {
      await own.drop();
    }
  });
});
