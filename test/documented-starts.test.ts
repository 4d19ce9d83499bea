import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { lstat, mkdtemp, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { issueToken } from '@bulkhead/core/operator';
import { connectTestClient } from '@bulkhead/core/testing';
import { createSql, roleSpecs, type Sql } from '@bulkhead/db';
import { ensureEmbedded, prepareEmbeddedRoles, type EmbeddedDatabase } from '@bulkhead/db/embedded';
import { discoverDeployables } from '@bulkhead/deployables';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, root } from './helpers.ts';

// Every command that the README, the docs and the deployables' READMEs give for starting a server or
// the console is run here exactly as written, through `sh -c` from the repository root (a desktop
// client's JSON configuration: its command, args and env, from a folder of its own), on a machine
// with nothing but the embedded database in a fresh data dir. Only the reader's own values are put
// in: the value of DATABASE_URL (the deployable's login on that database), of BULKHEAD_TOKEN (a token
// issued for the server), `/path/to/bulkhead` (the repository); PORT comes from the environment when
// the command sets none, so that nothing clashes with what else runs on the machine.
//
// Extraction: in README.md, docs/**/*.md, servers/*/README.md and apps/*/README.md, every line of a
// shell code block (a fence with no language or sh, bash, shell, console, text; `# comments` cut),
// every inline code span elsewhere, and every `command` + `args` of a JSON block, that starts a
// deployable: `pnpm start`, `pnpm bulkhead start`, `pnpm --filter <name> start`,
// `pnpm --filter <name> exec tsx src/main.ts`, `node [--import tsx] …/main.(ts|js)` or `tsx …/main.ts`.
// A command found is run, whatever it is; only the whole stack (`pnpm start`) is run elsewhere, by
// the tests named in STACK_STARTS, and a new way of writing it fails here until it is named there.

const SHELL = new Set(['', 'sh', 'bash', 'shell', 'console', 'text']);
const START =
  /(?:^|&&\s*)(?:[A-Z_]+=\S*\s+)*(?:pnpm\s+(?:--filter\s+\S+\s+)?start\b|pnpm\s+bulkhead\s+start\b|pnpm\s+--filter\s+\S+\s+exec\s+tsx\s+\S*main\.ts|node\s+(?:--import\s+tsx\s+)?\S*main\.(?:ts|js)\b|\S*tsx\s+\S*main\.ts)/;
const WHOLE_STACK = /(?:^|&&\s*)(?:[A-Z_]+=\S*\s+)*pnpm\s+(?:bulkhead\s+)?start\b/;

/**
 * The documented starts of the whole stack, and the tests that run `pnpm start` (each starts an
 * embedded database and every deployable: too heavy to repeat per spelling here).
 */
const STACK_STARTS: Record<string, string> = {
  'pnpm start': 'test/start-ctrl-c.test.ts, test/start.test.ts',
  'npm i -g pnpm@12.4.2 && pnpm install && pnpm start':
    'test/start-ctrl-c.test.ts (installing pnpm globally is the reader’s step)',
  'pnpm start -- --port-offset 1000': 'test/start-ctrl-c.test.ts (with --port-offset)',
  'BULKHEAD_PORT_OFFSET=1000 pnpm start':
    'test/start-ctrl-c.test.ts (pnpm start under BULKHEAD_PORT_OFFSET, refused on a port in use; a whole start with the offset by --port-offset)',
  'BULKHEAD_PORT_OFFSET=100 pnpm start':
    'test/start-ctrl-c.test.ts (pnpm start under BULKHEAD_PORT_OFFSET, refused on a port in use; a whole start with the offset by --port-offset)',
  'pnpm bulkhead start': 'test/start.test.ts (the CLI’s start command)',
  'BULKHEAD_DATA_DIR=/tmp/bh-experiment pnpm start': 'test/start.test.ts (with BULKHEAD_DATA_DIR)',
  'pnpm install && pnpm start': 'test/start-ctrl-c.test.ts (after the install the tests run in)',
  'STOCK_API_URL=http://127.0.0.1:4010 pnpm bulkhead start --only stock':
    'test/tutorial.test.ts (runs docs/tutorial.md in a copy of the repository)',
};

/** One way of starting a deployable, as the docs give it. */
interface Documented {
  /** The shell command, or for a client configuration `{ command, args, env }` as JSON. */
  text: string;
  client?: { command: string; args: string[]; env: Record<string, string> };
  where: string[];
}

function markdownFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.name.startsWith('.') || e.name === 'node_modules'
        ? []
        : e.isDirectory()
          ? walk(join(dir, e.name))
          : e.name.endsWith('.md')
            ? [join(dir, e.name)]
            : [],
    );
  const readmes = (folder: string) =>
    readdirSync(join(root, folder))
      .map((name) => join(root, folder, name, 'README.md'))
      .filter((f) => existsSync(f));
  return [join(root, 'README.md'), ...walk(join(root, 'docs')), ...readmes('servers'), ...readmes('apps')];
}

/** JSON objects with a string `command` and string `args`, anywhere in `value`. */
function clientConfigs(value: unknown): { command: string; args: string[]; env: Record<string, string> }[] {
  if (!value || typeof value !== 'object') return [];
  const o = value as Record<string, unknown>;
  const own =
    typeof o.command === 'string' && Array.isArray(o.args)
      ? [{ command: o.command, args: o.args as string[], env: (o.env ?? {}) as Record<string, string> }]
      : [];
  return [...own, ...Object.values(o).flatMap(clientConfigs)];
}

/** Every documented start command, with the places it is written. */
function documentedStarts(): Documented[] {
  const found = new Map<string, Documented>();
  const add = (text: string, where: string, client?: Documented['client']) => {
    const entry = found.get(text) ?? { text, ...(client ? { client } : {}), where: [] };
    entry.where.push(where);
    found.set(text, entry);
  };
  for (const file of markdownFiles()) {
    const lines = readFileSync(file, 'utf8').split('\n');
    const name = relative(root, file);
    let fence: { lang: string; start: number; body: string[] } | null = null;
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!;
      const marker = /^\s*(```|~~~)\s*([\w-]*)/.exec(line);
      if (marker) {
        if (!fence) {
          fence = { lang: marker[2]!.toLowerCase(), start: i + 1, body: [] };
          continue;
        }
        if (fence.lang === 'json') {
          try {
            for (const c of clientConfigs(JSON.parse(fence.body.join('\n'))))
              if ([c.command, ...c.args].some((a) => /main\.(ts|js)$/.test(a)))
                add(JSON.stringify(c), `${name}:${fence.start}`, c);
          } catch {
            // not a whole JSON document (an excerpt): no configuration to run
          }
        }
        fence = null;
        continue;
      }
      if (fence) {
        fence.body.push(line);
        if (!SHELL.has(fence.lang)) continue;
        const command = line
          .replace(/^\s*\$\s+/, '')
          .replace(/\s+#\s.*$/, '')
          .trim();
        if (START.test(command)) add(command, `${name}:${i + 1}`);
        continue;
      }
      for (const span of line.matchAll(/`([^`]+)`/g))
        if (START.test(span[1]!.trim())) add(span[1]!.trim(), `${name}:${i + 1}`);
    }
  }
  return [...found.values()];
}

const documented = documentedStarts();
const alone = documented.filter((d) => d.client || !WHOLE_STACK.test(d.text));
const deployables = discoverDeployables(root);

/** The deployable a command starts: its `--filter`, or the folder of the main file it names. */
function deployableOf(d: Documented): string {
  const text = d.client ? [d.client.command, ...d.client.args].join(' ') : d.text;
  const name = /--filter\s+(\S+)/.exec(text)?.[1] ?? /(?:servers|apps)\/([^/\s]+)\//.exec(text)?.[1];
  if (!name || !deployables.some((x) => x.name === name)) throw new Error(`no deployable named in ${text}`);
  return name;
}

let dataDir = '';
let embedded: EmbeddedDatabase;
let admin: Sql;
let logins: Record<string, string> = {};
const tokens: Record<string, string> = {};

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'bulkhead-documented-'));
  embedded = await ensureEmbedded({ dataDir });
  const specs = roleSpecs(deployables);
  logins = await prepareEmbeddedRoles(
    embedded.adminUrl,
    dataDir,
    specs,
    deployables.map((d) => d.name),
  );
  admin = createSql(embedded.adminUrl, { max: 2 });
  for (const d of deployables.filter((x) => x.kind === 'mcp'))
    tokens[d.name] = (
      await issueToken(admin, {
        server: d.name,
        label: 'documented start',
        scopes: [...d.scopes],
        customerId: d.customerBound ? 'C-1001' : null,
        expiresAt: new Date(Date.now() + 3600_000),
        createdBy: 'test',
      })
    ).token;
}, 180_000);

afterAll(async () => {
  await admin?.end({ timeout: 5 });
  await embedded?.stop();
  await rm(join(root, 'start.log'), { force: true });
  if (!dataDir) return;
  // As root with a temp dir the postgres user cannot enter, the cluster lives elsewhere, linked as pg.
  const pg = join(dataDir, 'pg');
  if ((await lstat(pg).catch(() => undefined))?.isSymbolicLink())
    await rm(await readlink(pg), { recursive: true, force: true });
  await rm(dataDir, { recursive: true, force: true });
}, 60_000);

/** The reader's values put into a command: their database, their token, their clone. */
function substitute(text: string, name: string): string {
  const out = text
    .replace(/\bDATABASE_URL=\S+/g, `DATABASE_URL=${logins[name]}`)
    .replace(/\bBULKHEAD_TOKEN=\S+/g, `BULKHEAD_TOKEN=${tokens[name]}`)
    .replaceAll('/path/to/bulkhead', root.replace(/\/$/, ''));
  if (out.includes('…')) throw new Error(`a placeholder this test does not fill in: ${out}`);
  return out;
}

/** The environment of a reader's shell: no DATABASE_URL, the data dir of this test, and a mark to find the processes by. */
function readerEnv(mark: string, port?: number): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    BULKHEAD_DATA_DIR: dataDir,
    NO_COLOR: '1',
    DOCUMENTED_START_MARK: mark,
    ...(port ? { PORT: String(port) } : {}),
  };
}

/** The processes still running with `mark` in their environment. */
function marked(mark: string): number[] {
  const needle = `DOCUMENTED_START_MARK=${mark}`;
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/environ`, 'utf8').split('\0').includes(needle);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Waits until no process of `mark` is left (a start that leaves one behind fails here, not the next test). */
async function allGone(mark: string): Promise<number[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const left = marked(mark);
    if (!left.length || Date.now() > deadline) return left;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs an HTTP start as written until /healthz answers, checks it serves, and stops it as Ctrl-C would. */
async function runHttp(command: string, name: string): Promise<void> {
  const given = /\bPORT=(\d+)/.exec(command)?.[1];
  const port = given ? Number(given) : await freePort();
  const mark = randomUUID();
  const child: ChildProcess = spawn('sh', ['-c', command], {
    cwd: root,
    env: readerEnv(mark, given ? undefined : port),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    // A start waits on /healthz; the deadline only bounds one that hangs (a build, a busy machine).
    const deadline = Date.now() + 180_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode} before serving:\n${output}`);
      if (
        await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      if (Date.now() > deadline) throw new Error(`did not answer /healthz:\n${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    if (tokens[name]) {
      const client = await connectTestClient(new URL(`http://127.0.0.1:${port}/mcp`), tokens[name]);
      try {
        expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      } finally {
        await client.close();
      }
    }
  } finally {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
    await exited;
  }
  expect(await allGone(mark)).toEqual([]);
}

/** Runs a stdio start as written under the SDK's client: initialize, then tools/list. */
async function runStdio(
  spawnAs: { command: string; args: string[]; env: Record<string, string>; cwd: string },
  mark: string,
): Promise<string[]> {
  const transport = new StdioClientTransport({ ...spawnAs, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const errors: string[] = [];
  transport.onerror = (err) => errors.push(err.message);
  const client = new Client({ name: 'documented-start', version: '1.0.0' });
  try {
    await client.connect(transport).catch((err: Error) => {
      throw new Error(`${err.message}\n${stderr}`);
    });
    const { tools } = await client.listTools();
    expect(errors).toEqual([]);
    return tools.map((t) => t.name);
  } finally {
    await client.close();
    expect(await allGone(mark)).toEqual([]);
  }
}

describe('documented starts', () => {
  it('finds the documented starts, and every start of the whole stack is one a test runs', () => {
    // The extraction reads what the docs say: the issue's two commands are among what it found.
    expect(documented.map((d) => d.text)).toEqual(
      expect.arrayContaining([
        'BULKHEAD_TOKEN=bh_… pnpm --filter dev-knowledge start -- --stdio',
        'BULKHEAD_OPS_ALERTMANAGER_URL=http://127.0.0.1:9093 pnpm --filter ops start',
      ]),
    );
    const stack = documented.filter((d) => !d.client && WHOLE_STACK.test(d.text));
    expect(stack.map((d) => d.text).filter((t) => !(t in STACK_STARTS))).toEqual([]);
    expect(Object.keys(STACK_STARTS).filter((t) => !stack.some((d) => d.text === t))).toEqual([]);
    // Every deployable is started alone somewhere in the docs.
    expect([...new Set(alone.map(deployableOf))].sort()).toEqual(deployables.map((d) => d.name).sort());
  });

  it.each(alone.map((d) => [d.text, d] as const))(
    '%s',
    async (_text, d) => {
      const name = deployableOf(d);
      if (d.client) {
        const { command, args, env } = d.client;
        const mark = randomUUID();
        // A desktop client starts the server from a folder of its own, with the env of its configuration.
        const cwd = await mkdtemp(join(tmpdir(), 'bulkhead-client-'));
        try {
          const tools = await runStdio(
            {
              command: substitute(command, name),
              args: args.map((a) => substitute(a, name)),
              env: {
                PATH: process.env.PATH ?? '',
                DOCUMENTED_START_MARK: mark,
                ...Object.fromEntries(
                  Object.entries(env).map(([k, v]) => [k, substitute(`${k}=${v}`, name).slice(k.length + 1)]),
                ),
              },
              cwd,
            },
            mark,
          );
          expect(tools.length).toBeGreaterThan(0);
        } finally {
          await rm(cwd, { recursive: true, force: true });
        }
        return;
      }
      const command = substitute(d.text, name);
      if (/\s--stdio\b/.test(command)) {
        const mark = randomUUID();
        const tools = await runStdio(
          { command: 'sh', args: ['-c', command], env: readerEnv(mark), cwd: root },
          mark,
        );
        expect(tools.length).toBeGreaterThan(0);
      } else await runHttp(command, name);
    },
    300_000,
  );

  it('a server started alone on a schema behind its code stops with one sentence naming the command that migrates', async () => {
    const d = alone.find((x) => /^BULKHEAD_TOKEN=\S+ DATABASE_URL=\S+ node .*--stdio$/.test(x.text));
    expect(d?.where).toEqual(['servers/dev-knowledge/README.md:12']);
    await admin`delete from bulkhead_migrations where version = 54`;
    try {
      const mark = randomUUID();
      const child = spawn('sh', ['-c', substitute(d!.text, 'dev-knowledge')], {
        cwd: root,
        env: readerEnv(mark),
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
      child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      expect({ code, stdout, stderr }).toEqual({
        code: 1,
        stdout: '',
        stderr:
          "dev-knowledge: the database's schema is behind this code (migration 0054_schema_versions is not applied), and dev-knowledge never migrates under its own role: " +
          "apply it as the schema's owner with `DATABASE_URL=<the owner's URL> pnpm bulkhead db migrate`, then start again\n",
      });
      const [row] = await admin<
        { n: number }[]
      >`select count(*)::int as n from bulkhead_migrations where version = 54`;
      expect(row!.n).toBe(0);
    } finally {
      await admin`insert into bulkhead_migrations (version, name) values (54, '0054_schema_versions') on conflict do nothing`;
    }
  }, 120_000);
});
