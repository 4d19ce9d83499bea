import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { migrate, openDatabase, type Sql } from '@bulkhead/db';
import { parse, type Command } from '../command.ts';
import type { CliEnv } from '../env.ts';
import { UsageError, type Io } from '../io.ts';
import { defaultUrl, discoverServers, type ServerManifest } from '../servers.ts';

/** Steps `start` runs after migrating and before the servers start (the demo data joins here). */
export type StartHook = (input: {
  sql: Sql;
  env: CliEnv;
  io: Io;
  embedded: boolean;
  servers: ServerManifest[];
}) => Promise<void>;
export const startHooks: StartHook[] = [];

async function waitHealthy(
  server: ServerManifest,
  child: ChildProcess,
  timeoutMs = 90_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && child.exitCode === null) {
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/healthz`);
      if (res.ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

export const startCommand: Command = {
  name: 'start',
  summary: 'start the database (embedded unless DATABASE_URL) and every server',
  help: `Usage: bulkhead start [--only <a,b>] [--port-offset <n>] [--quiet]

Starts the embedded PostgreSQL (unless DATABASE_URL is set), applies the
migrations, prepares the demo data on a first start, then starts every server
under servers/ as its own process on its own port, and prints their URLs.
Ctrl-C stops the servers, then the database.

Options:
  --only <a,b>         start only these servers
  --port-offset <n>    add n to every server's port (a second stack beside the first)
  --quiet              do not relay the servers' log lines`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      only: { type: 'string' },
      'port-offset': { type: 'string', default: '0' },
      quiet: { type: 'boolean', default: false },
    });
    const offset = Number(values['port-offset']);
    if (!Number.isInteger(offset) || offset < 0 || offset > 60_000)
      throw new UsageError('--port-offset: a whole number from 0 to 60000');
    let servers = discoverServers().map((s) => ({ ...s, port: s.port + offset }));
    if (values.only) {
      const only = values.only.split(',').map((s) => s.trim());
      const unknown = only.filter((n) => !servers.some((s) => s.name === n));
      if (unknown.length)
        throw new UsageError(
          `--only: unknown server ${unknown.join(', ')}; servers: ${servers.map((s) => s.name).join(', ')}`,
        );
      servers = servers.filter((s) => only.includes(s.name));
    }
    io.err(
      env.DATABASE_URL
        ? 'Using DATABASE_URL.'
        : `Starting the embedded PostgreSQL (data in ${env.BULKHEAD_DATA_DIR})...`,
    );
    const db = await openDatabase({
      ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {}),
      dataDir: env.BULKHEAD_DATA_DIR,
      applicationName: 'bulkhead-start',
      max: 4,
      log: (line) => io.err(line),
    });
    const children = new Map<string, ChildProcess>();
    let stopping = false;
    const stop = async (code: number) => {
      if (stopping) return;
      stopping = true;
      io.err('Stopping the servers...');
      await Promise.all(
        [...children.values()].map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null) return resolve();
              child.once('exit', () => resolve());
              child.kill('SIGTERM');
              setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
            }),
        ),
      );
      if (db.embedded) io.err('Stopping the embedded PostgreSQL...');
      const stopped = await db.close();
      if (db.embedded && !stopped)
        io.err('The embedded PostgreSQL keeps running: another process still uses it.');
      process.exit(code);
    };
    process.once('SIGINT', () => void stop(0));
    process.once('SIGTERM', () => void stop(0));

    const { applied } = await migrate(db.sql);
    if (applied.length) io.err(`Applied migrations: ${applied.join(', ')}`);
    for (const hook of startHooks) await hook({ sql: db.sql, env, io, embedded: db.embedded, servers });

    // MCP servers link approval notifications to the console that this start runs.
    const approvalConsole = servers.find((s) => s.kind === 'console');
    const consoleUrl = env.BULKHEAD_CONSOLE_URL ?? (approvalConsole && defaultUrl(approvalConsole));
    for (const server of servers) {
      const child = spawn(process.execPath, ['--import', 'tsx', join(server.dir, 'src', 'main.ts')], {
        cwd: server.dir,
        env: {
          ...env.passthrough,
          DATABASE_URL: db.url,
          BULKHEAD_DATA_DIR: env.BULKHEAD_DATA_DIR,
          PORT: String(server.port),
          BULKHEAD_MIGRATE: 'false',
          LOG_LEVEL: env.serverLogLevel,
          ...(consoleUrl ? { BULKHEAD_CONSOLE_URL: consoleUrl } : {}),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.set(server.name, child);
      for (const stream of [child.stdout!, child.stderr!]) {
        createInterface({ input: stream }).on('line', (line) => {
          if (!values.quiet) io.err(`[${server.name}] ${line}`);
        });
      }
      child.once('exit', (code, signal) => {
        if (stopping) return;
        io.err(`${server.name} exited (${signal ?? `code ${code}`}); stopping everything.`);
        void stop(1);
      });
    }
    const healthy = await Promise.all(servers.map((s) => waitHealthy(s, children.get(s.name)!)));
    const failed = servers.filter((_, i) => !healthy[i]);
    if (failed.length) {
      io.err(`Did not come up: ${failed.map((s) => s.name).join(', ')}.`);
      await stop(1);
      return 1;
    }
    io.out('');
    io.out('Bulkhead is running:');
    for (const s of servers) io.out(`  ${s.name.padEnd(14)} ${defaultUrl(s)}`);
    io.out('');
    if (approvalConsole)
      io.out(
        `Approve gated actions at ${defaultUrl(approvalConsole)} with an approver token: pnpm bulkhead approvers add --label <who>.`,
      );
    io.out(
      'Issue a token: pnpm bulkhead tokens issue --server <name> --label <who>. Ctrl-C stops everything.',
    );
    await new Promise(() => {});
    return 0;
  },
};
