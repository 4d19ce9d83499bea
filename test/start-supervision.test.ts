import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, expect, it } from 'vitest';
import { freeOffset, root, startStack, type StartedStack } from './helpers.ts';

// Issue 44, items 6 to 8: `pnpm start --only` names only what runs, with its offset; the embedded
// PostgreSQL is restarted when it dies and the servers reconnect by themselves; the terminal gets no
// stack trace (the log file does), and pretty lines on a TTY. One start serves the first three tests.
let dataDir = '';
let offset = 0;
let stack: StartedStack | undefined;
afterAll(async () => {
  if (stack && stack.child.exitCode === null && stack.child.signalCode === null) stack.child.kill('SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const output = () => (stack ? stack.stdout() + stack.stderr() : '');

/** Resolves when the start's output matches `pattern` (the event itself, however long it takes). */
async function printed(pattern: RegExp): Promise<RegExpExecArray> {
  for (;;) {
    const match = pattern.exec(output());
    if (match) return match;
    if (stack!.child.exitCode !== null) throw new Error(`start exited:\n${output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A real MCP client's `search_docs` call on dev-knowledge with `token`. */
async function searchDocs(token: string) {
  const client = new Client(
    { name: 'start-supervision-test', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${3103 + offset}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  try {
    return await client.callTool({ name: 'search_docs', arguments: { query: 'rotate a leaked token' } });
  } finally {
    await client.close();
  }
}

it('pnpm start --only dev-knowledge names only dev-knowledge, at its port with the offset, and no console', async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'bulkhead-supervised-'));
  offset = await freeOffset();
  stack = await startStack(
    dataDir,
    offset,
    { LOG_LEVEL: 'info' },
    { verbose: true, args: ['--only', 'dev-knowledge'] },
  );
  const out = stack.stdout();
  expect(out).toMatch(new RegExp(`^ {2}dev-knowledge +http://127\\.0\\.0\\.1:${3103 + offset}/mcp `, 'm'));
  expect(out).toMatch(/^ {2}dev-knowledge +bh_dev-knowledge_\S+$/m);
  expect(out).not.toMatch(/^ {2}(console|admin|customer|ops) /m);
  // Every URL it prints is dev-knowledge's, with the offset; the console is not linked.
  expect(new Set([...output().matchAll(/https?:\/\/[^\s"]+/g)].map((m) => m[0]))).toEqual(
    new Set([`http://127.0.0.1:${3103 + offset}/mcp`]),
  );
  expect(out).not.toContain('Approve gated actions');
  expect(out).toContain(
    'No console runs in this start: decide gated actions with pnpm bulkhead approvals list.',
  );
  expect(out).toContain(
    `Issue a token: pnpm bulkhead tokens issue --server <name> --label <who> --port-offset ${offset}.`,
  );
  expect(out).toContain(`Logs, stack traces included: ${join(dataDir, 'logs')}/<server>.log.`);
}, 300_000);

it('restarts the embedded PostgreSQL killed under it, saying so; the server answers again, no stack on the terminal', async () => {
  const token = /^ {2}dev-knowledge +(bh_dev-knowledge_\S+)$/m.exec(stack!.stdout())![1]!;
  const pid = Number((await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
  process.kill(pid, 'SIGKILL');
  await printed(
    new RegExp(
      `^The embedded PostgreSQL stopped \\(its process ${pid} is gone\\); calls answer 503 until it is back; restarting it in 1 s\\.$`,
      'm',
    ),
  );
  // While it is away (the restart waits a second first), a call is answered 503 and the server logs why.
  const res = await fetch(`http://127.0.0.1:${3103 + offset}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
  expect(res.status).toBe(503);
  await printed(
    /^The embedded PostgreSQL runs again on 127\.0\.0\.1:\d+; the servers reconnect by themselves\.$/m,
  );

  const result = await searchDocs(token);
  expect(result.isError).toBeFalsy();
  expect((result.structuredContent as { count: number }).count).toBeGreaterThan(0);

  // The terminal had the server's lines (JSON: this is no TTY), no stack trace; its log file has them all.
  const log = await readFile(join(dataDir, 'logs', 'dev-knowledge.log'), 'utf8');
  const listening = /^\{"level":30,.*"msg":"dev-knowledge listening"\}$/m.exec(log)?.[0];
  expect(listening, log).toBeDefined();
  expect(output()).toContain(`[dev-knowledge] ${listening}`);
  expect(output()).not.toMatch(/^\s*at \S|"stack"/m);
}, 300_000);

it('stops with exit code 0 on SIGINT after the restart, the embedded PostgreSQL with it', async () => {
  const exited = new Promise<number | null>((resolve) => stack!.child.once('exit', (code) => resolve(code)));
  stack!.child.kill('SIGINT');
  expect(await exited).toBe(0);
  expect(output()).toContain('Stopping the embedded PostgreSQL...');
  expect(existsSync(join(dataDir, 'database.url'))).toBe(false);
}, 120_000);

// docs/configuration.md: "JSON logs, pretty on a TTY". Under `script` (util-linux), start's output is a
// terminal; Ctrl-C typed into it reaches the whole foreground process group, as in a real one.
it('on a terminal the servers’ lines are pretty, and Ctrl-C stops everything with exit code 0', async () => {
  const env: Record<string, string | undefined> = {
    ...process.env,
    BULKHEAD_DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    NO_COLOR: '1',
  };
  delete env.DATABASE_URL;
  const command = `exec ${process.execPath} --import tsx packages/cli/src/main.ts start --only dev-knowledge --port-offset ${offset}`;
  const child = spawn('script', ['-qefc', command, '/dev/null'], {
    cwd: root,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let terminal = '';
  child.stdout.on('data', (d: Buffer) => (terminal += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    while (!terminal.includes('Ctrl-C stops everything')) {
      if (child.exitCode !== null) throw new Error(`start exited:\n${terminal}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(terminal).toMatch(
      new RegExp(
        `^\\[dev-knowledge\\] \\[\\d\\d:\\d\\d:\\d\\d\\] INFO: dev-knowledge listening \\{"url":"http://127\\.0\\.0\\.1:${3103 + offset}/mcp"\\}\\r?$`,
        'm',
      ),
    );
    expect(terminal).not.toContain('{"level":');
    child.stdin.write('\x03');
    expect(await exited).toBe(0);
    expect(terminal).toContain('Stopping the embedded PostgreSQL...');
    expect(terminal).not.toMatch(/ERR_PNPM|ELIFECYCLE|"stack"|^\s*at \S/m);
    expect(existsSync(join(dataDir, 'database.url'))).toBe(false);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}, 300_000);
