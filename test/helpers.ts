import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startMailCatcher, type MailCatcher } from '@bulkhead/core/mail-catcher';
import { discoverDeployables } from '@bulkhead/deployables';

/** The repository root. */
export const root = fileURLToPath(new URL('..', import.meta.url));

/** A free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

let catcher: Promise<MailCatcher> | undefined;

/**
 * This test file's SMTP server on loopback (a real one, started on first use): servers that
 * {@link spawnServer} starts send their approved e-mails here unless told otherwise.
 */
export function testMailCatcher(): Promise<MailCatcher> {
  return (catcher ??= startMailCatcher());
}

/** A server started as its own process, the way `pnpm start` runs it. */
export interface ServerProcess {
  url: URL;
  child: ChildProcess;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts the deployable `name`'s `src/main.ts` (found by discovery) on a free port (or on `port`, to restart a server where its
 * clients expect it) against `databaseUrl` and waits for /healthz.
 */
export async function spawnServer(
  name: string,
  databaseUrl: string,
  env: Record<string, string> = {},
  port?: number,
): Promise<ServerProcess> {
  port ??= await freePort();
  const mail = await testMailCatcher();
  let output = '';
  const dir = discoverDeployables(root).find((d) => d.name === name)?.dir;
  if (!dir) throw new Error(`no deployable named ${name}`);
  const child = spawn(process.execPath, ['--import', 'tsx', `${dir}/src/main.ts`], {
    cwd: dir,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      BULKHEAD_MIGRATE: 'false',
      LOG_LEVEL: 'info',
      BULKHEAD_SMTP_URL: mail.url,
      BULKHEAD_MAIL_FROM: `${name}@bulkhead.test`,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  // A start waits on /healthz, not on a clock: 90 s only bounds a start that hangs (four servers starting
  // at once on a busy two-core machine take well over 30 s).
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${name} exited early: ${output}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
    } catch {
      // not yet listening
    }
    if (Date.now() > deadline) {
      // Not left running behind the failed start: no one else holds it to stop it.
      child.kill('SIGKILL');
      throw new Error(`${name} did not become healthy: ${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    child,
    output: () => output,
    stop: (signal = 'SIGTERM') =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill(signal);
      }),
  };
}

/** Whether `port` on 127.0.0.1 can be listened on now. */
export const portIsFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** The lowest port the kernel hands out for outgoing connections and `listen(0)` (Linux's default 32768). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 5000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * A `--port-offset` for `bulkhead start` whose ports (3100 + offset up to `lastPort` + offset) are free
 * now, all below the kernel's ephemeral range: a port in that range may be taken at any moment by a
 * connection's local end (the stack's own connections to its database, or another test's), so a
 * server would fail to bind it although it was free when checked.
 */
export async function freeOffset(lastPort = 3104): Promise<number> {
  const highest = ephemeralLow() - 1 - lastPort;
  for (;;) {
    const offset = 2_000 + Math.floor(Math.random() * (highest - 2_000));
    const ports = Array.from({ length: lastPort - 3100 + 1 }, (_, i) => 3100 + offset + i);
    if ((await Promise.all(ports.map(portIsFree))).every(Boolean)) return offset;
  }
}

/** `bulkhead start` as its own process, on the embedded database in `dataDir`. */
export interface StartedStack {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
}

/** How {@link startStack} runs `bulkhead start`. */
export interface StartOptions {
  /** The bundled binary, as `pnpm bulkhead start` runs it (default: the TypeScript source, as `pnpm start`). */
  bundled?: boolean;
  /** Relay the servers' log lines (default: `--quiet`). */
  verbose?: boolean;
  /** More arguments (`--only dev-knowledge`). */
  args?: string[];
}

/**
 * Runs `bulkhead start --port-offset <offset> --quiet` on the embedded database kept in `dataDir`
 * (DATABASE_URL unset) and waits until it says it is running (or fails when it exits first).
 */
export async function startStack(
  dataDir: string,
  offset: number,
  extraEnv: Record<string, string> = {},
  options: StartOptions = {},
): Promise<StartedStack> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    BULKHEAD_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  delete env.DATABASE_URL;
  const cli = options.bundled
    ? [`${root}packages/cli/bin/bulkhead.mjs`]
    : ['--import', 'tsx', `${root}packages/cli/src/main.ts`];
  const child = spawn(
    process.execPath,
    [
      ...cli,
      'start',
      '--port-offset',
      String(offset),
      ...(options.verbose ? [] : ['--quiet']),
      ...(options.args ?? []),
    ],
    { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  // A first start (initdb, demo data) on a busy machine takes long: waited for, not timed.
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ctrl-C stops everything')) resolve();
    });
    child.once('exit', (code, signal) =>
      reject(new Error(`start exited (${signal ?? code}): ${out}\n${err}`)),
    );
  });
  return { child, stdout: () => out, stderr: () => err };
}

/** The HTTP status of a raw 2026-07-28 `tools/list` through `url` with `token` (its body read and dropped). */
export const listStatus = (url: URL, token: string): Promise<number> =>
  fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  }).then(async (r) => (await r.arrayBuffer(), r.status));
