import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import {
  chmod,
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readlink,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createSql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { discoverDeployables } from '@bulkhead/deployables';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portIsFree, root } from './helpers.ts';

// docs/tutorial.md, run as a reader runs it, in a copy of this repository: every code block an HTML
// comment marks (`<!-- tutorial: … -->`) is written to its file, run, started in the background or
// compared with the file the CLI generated, in the page's order. The page is the script: nothing of
// it is repeated here but the outcomes each step must have. Slow by nature (an install, a server's
// tests, a first start with its demo data): about two minutes.
//
// Markers, each before a fenced block:
//   file <path>                   write the block to <path>
//   run [| capture NAME /re/] [| replace TEXT NAME]
//                                 run it with bash -e; a capture sets NAME (the regex's first group)
//                                 in the environment of every later block, as the reader's `export`
//                                 does; a replace puts NAME's value where the page shows an example
//   background until <url>        start it and wait until <url> answers 2xx
//   shows <path>                  the block is exactly the file <path> as the CLI generated it
// The page's ports (the stand-in's and the server's) become free ones below 32768 here.

interface Step {
  line: number;
  action: 'file' | 'run' | 'background' | 'shows';
  arg: string;
  code: string;
  capture?: { name: string; re: RegExp };
  replace?: { text: string; name: string };
}

const page = readFileSync(join(root, 'docs', 'tutorial.md'), 'utf8');

/** The marked blocks of the page, in order. */
function parseTutorial(md: string): Step[] {
  const steps: Step[] = [];
  const marker = /<!-- tutorial: (.+?) -->\n\n```\w*\n([\s\S]*?)```/g;
  for (const m of md.matchAll(marker)) {
    const [head = '', ...options] = m[1]!.split(' | ');
    const [action, ...rest] = head.split(' ');
    const step: Step = {
      line: md.slice(0, m.index).split('\n').length,
      action: action as Step['action'],
      arg: rest.join(' ').replace(/^until /, ''),
      code: m[2]!,
    };
    for (const option of options) {
      const capture = /^capture (\w+) \/(.+)\/$/.exec(option);
      const replace = /^replace (\S+) (\w+)$/.exec(option);
      if (capture) step.capture = { name: capture[1]!, re: new RegExp(capture[2]!) };
      else if (replace) step.replace = { text: replace[1]!, name: replace[2]! };
      else throw new Error(`docs/tutorial.md:${step.line}: unknown option "${option}"`);
    }
    if (!['file', 'run', 'background', 'shows'].includes(step.action))
      throw new Error(`docs/tutorial.md:${step.line}: unknown marker "${m[1]}"`);
    steps.push(step);
  }
  return steps;
}

const steps = parseTutorial(page);
let next = 0;
let copy = '';
let db: TestDatabase | undefined;
/** What the reader's shells hold: the test's environment, cleaned, plus what the page exports. */
const env: Record<string, string> = {};
const outputs = new Map<Step, string>();
const background: { step: Step; child: ChildProcess; output: () => string }[] = [];
/** The page's port → the one this run uses. */
const ports = new Map<string, string>();

const withPorts = (text: string) => text.replace(/\b\d{4,5}\b/g, (p) => ports.get(p) ?? p);
const outputOf = (step: Step) => outputs.get(step) ?? '';
const stepWith = (command: string) => {
  const found = steps.find((s) => s.code.includes(command));
  if (!found) throw new Error(`docs/tutorial.md has no marked block with "${command}"`);
  return found;
};
const backgroundOf = (command: string) => background.find((b) => b.step === stepWith(command))!;

/** A free loopback port below the kernel's ephemeral range, and none of the repository's servers'. */
async function lowFreePort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!taken.has(port) && (await portIsFree(port))) return port;
  }
}

/** Runs `bash -e -c code` in the copy with the reader's environment. */
function bash(
  code: string,
  timeoutMs = 300_000,
): Promise<{ code: number | null; output: string; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-e', '-c', code], { cwd: copy, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => ((output += d.toString()), (stdout += d.toString())));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (exit) => {
      clearTimeout(timer);
      resolve({ code: exit, output, stdout });
    });
  });
}

async function runStep(step: Step): Promise<void> {
  const where = `docs/tutorial.md:${step.line}`;
  let code = withPorts(step.code);
  if (step.replace) code = code.replaceAll(step.replace.text, env[step.replace.name] ?? '');
  switch (step.action) {
    case 'file':
      await mkdir(dirname(join(copy, step.arg)), { recursive: true });
      await writeFile(join(copy, step.arg), code);
      return;
    case 'shows':
      expect(code, `${where}: the page shows ${step.arg} as generated`).toBe(
        await readFile(join(copy, step.arg), 'utf8'),
      );
      return;
    case 'run': {
      const result = await bash(code);
      outputs.set(step, result.output);
      expect(result.code, `${where}: ${code}\n${result.output.slice(-4000)}`).toBe(0);
      if (step.capture) {
        const value = step.capture.re.exec(result.output)?.[1];
        expect(value, `${where}: ${step.capture.re} in\n${result.output}`).toBeDefined();
        env[step.capture.name] = value!;
      }
      return;
    }
    case 'background': {
      const child = spawn('bash', ['-e', '-c', code], {
        cwd: copy,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      background.push({ step, child, output: () => output });
      const url = withPorts(step.arg);
      const deadline = Date.now() + 300_000;
      for (;;) {
        if (child.exitCode !== null) throw new Error(`${where}: ${code} exited:\n${output}`);
        if (
          await fetch(url).then(
            (r) => r.ok,
            () => false,
          )
        )
          return;
        if (Date.now() > deadline) throw new Error(`${where}: ${url} did not answer:\n${output}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }
}

/** Runs the page's blocks from where the last call stopped through the one containing `command`. */
async function runThrough(command: string): Promise<void> {
  const last = steps.indexOf(stepWith(command));
  expect(last, `"${command}" comes after what already ran`).toBeGreaterThanOrEqual(next);
  while (next <= last) await runStep(steps[next++]!);
}

beforeAll(async () => {
  copy = await mkdtemp(join(tmpdir(), 'bulkhead-tutorial-'));
  // Open to the postgres user, so that the embedded PostgreSQL of `bulkhead start` runs from the copy.
  await chmod(copy, 0o755);
  const listed = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  });
  for (const file of listed.stdout.split('\0').filter(Boolean)) {
    const info = await stat(join(root, file)).catch(() => undefined);
    if (!info?.isFile()) continue; // deleted in the worktree, not yet committed
    await mkdir(dirname(join(copy, file)), { recursive: true });
    await copyFile(join(root, file), join(copy, file));
    await chmod(join(copy, file), info.mode);
  }

  for (const [key, value] of Object.entries(process.env))
    if (
      value !== undefined &&
      !/^(VITEST|TINYPOOL|BULKHEAD_|npm_|PNPM_|INIT_CWD$|PWD$|OLDPWD$|NODE_ENV$|FORCE_COLOR$)/.test(key)
    )
      env[key] = value;
  // The reader's shell is no CI job (where pnpm would refuse to add the new package to the lockfile);
  // packages come from the store, which has them all.
  for (const key of ['CI', 'CONTINUOUS_INTEGRATION', 'GITHUB_ACTIONS', 'BUILD_NUMBER', 'RUN_ID'])
    delete env[key];
  Object.assign(env, { NO_COLOR: '1', npm_config_prefer_offline: 'true' });
  // With DATABASE_URL (CI), the reader's database is a fresh one of this test's on that server;
  // without it, everything runs on the embedded default, as for a reader without it.
  delete env.DATABASE_URL;
  if (process.env.DATABASE_URL) {
    db = await createTestDatabase({ migrate: false });
    env.DATABASE_URL = db.adminUrl;
  }

  const taken = new Set(discoverDeployables(root).map((d) => d.port));
  for (const port of ['4010', '3105']) {
    const free = await lowFreePort(taken);
    taken.add(free);
    ports.set(port, String(free));
  }

  const install = await bash('pnpm install --offline');
  expect(install.code, install.output).toBe(0);
}, 300_000);

afterAll(async () => {
  for (const { child } of background.reverse()) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // Ctrl-C, as the reader stops them: `bulkhead start` stops its server, then its database.
    process.kill(-child.pid!, 'SIGINT');
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }
  if (db) {
    await db.drop();
    // Roles are the cluster's, not the database's: the ones `bulkhead start` made for the new server.
    const admin = createSql(process.env.BULKHEAD_TEST_ADMIN_URL!, { max: 1 });
    await admin`drop role if exists bulkhead_stock_login, bulkhead_stock`.catch(() => undefined);
    await admin.end();
  }
  if (!copy) return;
  // As root, an embedded cluster may live outside the copy, linked as .bulkhead/pg.
  const pg = join(copy, '.bulkhead', 'pg');
  if ((await lstat(pg).catch(() => undefined))?.isSymbolicLink())
    await rm(await readlink(pg), { recursive: true, force: true });
  await rm(copy, { recursive: true, force: true });
}, 60_000);

// Each step waits on child processes (an install, a test run, a first start): minutes on a busy CI machine.
describe('docs/tutorial.md, run in a copy of the repository', { timeout: 300_000 }, () => {
  it('marks its blocks in a form this test reads', () => {
    expect(page.match(/<!-- tutorial: /g)?.length).toBe(steps.length);
    expect(steps.map((s) => s.action)).toEqual(
      expect.arrayContaining(['file', 'run', 'background', 'shows']),
    );
  });

  it('1. the stand-in of the reader’s system answers the read it describes', async () => {
    await runThrough('node stock-stand-in.mjs');
    const item = await fetch(`http://127.0.0.1:${ports.get('4010')}/items/SKU-1001`);
    expect(await item.json()).toEqual({ sku: 'SKU-1001', name: 'Brass hinge, 80 mm', in_stock: 240 });
  });

  it('2. bulkhead new server drafts one tool per chosen operation, the read through ctx.upstream and the write gated', async () => {
    await runThrough('pnpm install');
    expect(outputOf(stepWith('new server --from-openapi stock-api.yaml\n'))).toMatch(
      /^ {2}getItem +GET \/items\/\{sku\} +Look up one item by its SKU$/m,
    );
    const created = outputOf(stepWith('--operation getItem'));
    expect(created).toContain(
      `Created servers/stock: port ${ports.get('3105')}, scopes approvals:read, stock:read, stock:write, not customer-bound.`,
    );
    expect(created).toContain('Upstream stock-api: base URL from STOCK_API_URL');
    for (const file of [
      'get-item.ts',
      'get-item.test.ts',
      'reserve-item.ts',
      'reserve-item.test.ts',
      'index.ts',
    ])
      expect(existsSync(join(copy, 'servers/stock/src/tools', file)), file).toBe(true);
    // Linked: a workspace package now.
    expect(existsSync(join(copy, 'servers/stock/node_modules/@bulkhead/core'))).toBe(true);
    expect(await readFile(join(copy, 'pnpm-lock.yaml'), 'utf8')).toContain('\n  servers/stock:\n');
  });

  it('3. the new server’s own tests pass', async () => {
    await runThrough('pnpm vitest run servers/stock');
    const out = outputOf(stepWith('pnpm vitest run servers/stock'));
    expect(out).toMatch(/Test Files +3 passed \(3\)/);
    expect(out).toMatch(/Tests +7 passed \(7\)/);
  });

  it('4. bulkhead start --only stock serves it, under its own role, against the stand-in', async () => {
    await runThrough('pnpm bulkhead start --only stock');
    const start = backgroundOf('pnpm bulkhead start --only stock');
    // /healthz answers before `start` prints its listing.
    for (let i = 0; i < 200 && !start.output().includes('Ctrl-C stops everything'); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(start.output()).toMatch(
      new RegExp(
        `^ {2}stock +http://127\\.0\\.0\\.1:${ports.get('3105')}/mcp +as bulkhead_stock_login$`,
        'm',
      ),
    );
  });

  it('5. tokens issue gives one token for the stock server', async () => {
    await runThrough('pnpm bulkhead tokens issue --server stock');
    expect(env.STOCK_TOKEN).toMatch(/^bh_stock_/);
    expect(outputOf(stepWith('tokens issue'))).toContain('Scopes: approvals:read, stock:read, stock:write.');
  });

  it('6. the client reads through get_item and the gated reserve_item answers pending approval; nothing is sent', async () => {
    await runThrough('node servers/stock/try-stock.mjs');
    const out = outputOf(stepWith('node servers/stock/try-stock.mjs'));
    expect(out).toContain('"text": "Brass hinge, 80 mm"');
    expect(out).toContain('"in_stock": 240');
    expect(out).toContain('"status": "pending_approval"');
    expect(env.APPROVAL_ID).toMatch(/^ap_/);
    const standIn = backgroundOf('node stock-stand-in.mjs').output();
    expect(standIn).toContain('GET /items/SKU-1001');
    expect(standIn).not.toContain('POST');
  });

  it('7. once a person approves, the stand-in receives exactly one reservation and the approval is executed', async () => {
    await runThrough('pnpm bulkhead approvals list');
    expect(outputOf(stepWith('approvals list'))).toMatch(
      new RegExp(`^${env.APPROVAL_ID} +stock +reserve_item +pending +Stock tutorial client`, 'm'),
    );
    await runThrough('pnpm bulkhead audit tail --server stock');
    expect(env.BULKHEAD_APPROVER_TOKEN).toMatch(/^bh_console_/);
    expect(outputOf(stepWith('approvals approve'))).toContain(
      `Approved ${env.APPROVAL_ID} (reserve_item on stock)`,
    );
    expect(outputOf(stepWith('approvals approve'))).toMatch(/^Executed on .+ in \d+ ms\.$/m);
    const received = backgroundOf('node stock-stand-in.mjs')
      .output()
      .split('\n')
      .filter((line) => line.startsWith('POST'));
    expect(received).toEqual(['POST /reservations {"sku":"SKU-1001","order":"ORD-2041","quantity":5}']);
    const listed = await bash(`pnpm bulkhead approvals list --status all --json`);
    expect(listed.code, listed.output).toBe(0);
    expect(
      (JSON.parse(listed.stdout) as { id: string; status: string }[]).map((a) => [a.id, a.status]),
    ).toEqual([[env.APPROVAL_ID, 'executed']]);
    const audit = outputOf(stepWith('audit tail'));
    expect(audit).toMatch(new RegExp(`reserve_item +pending_approval .*approval ${env.APPROVAL_ID}`));
    expect(audit).toMatch(new RegExp(`reserve_item +executed .*approval ${env.APPROVAL_ID}`));
    // Every marked block ran.
    expect(next).toBe(steps.length);
  });
});
