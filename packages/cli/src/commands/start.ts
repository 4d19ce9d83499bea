import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { startSealer, type Sealer } from '@bulkhead/audit';
import { storeCaughtMail } from '@bulkhead/core/operator';
import type { MailCatcher } from '@bulkhead/core/mail-catcher';
import { createSql, loginRole, migrate, openDatabase, prepareEmbeddedRoles, type Sql } from '@bulkhead/db';
import { auditKey } from '../audit-key.ts';
import { deployableRoles } from '../deployable-roles.ts';
import { parse, type Command } from '../command.ts';
import type { CliEnv } from '../env.ts';
import { CliError, UsageError, type Io } from '../io.ts';
import { defaultUrl, discoverServers, portOffsetOption, type ServerManifest } from '../servers.ts';

/** Steps `start` runs after migrating and before the servers start (the demo data joins here). */
export type StartHook = (input: {
  sql: Sql;
  env: CliEnv;
  io: Io;
  embedded: boolean;
  servers: ServerManifest[];
}) => Promise<void>;
export const startHooks: StartHook[] = [];

/** The width of the name column when listing `servers`: 14, or the longest name and a space. */
export function nameWidth(servers: readonly { name: string }[]): number {
  return Math.max(14, ...servers.map((s) => s.name.length + 1));
}

async function waitHealthy(
  server: ServerManifest,
  child: ChildProcess,
  timeoutMs = 90_000,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && child.exitCode === null && child.signalCode === null) {
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
migrations, creates every deployable's group role with its grants and a login
role per server (passwords generated into the data dir), prepares the demo data
on a first start, then starts every server under servers/ as its own process on
its own port, connected under its own role, runs the audit sealer, and prints
the URLs and which role each server is connected as. Approved e-mails go to
a mail catcher on loopback (an SMTP server this command runs) and show on the
console's Sent mail page; with BULKHEAD_SMTP_URL set they go there instead.
Ctrl-C stops the servers, then the database. (With a DATABASE_URL whose role cannot create roles, run
\`bulkhead db roles\` as the owner first, or set BULKHEAD_ALLOW_OWNER_ROLE=true.)

A server that reaches another system (bulkhead.upstreams in its package.json)
starts only when the variable holding that system's base URL is set, e.g.
BULKHEAD_OPS_ALERTMANAGER_URL for ops; without it the others start and the
listing says what is missing.

Options:
  --only <a,b>         start only these servers
  --port-offset <n>    add n to every server's port (a second stack beside the first;
                       default BULKHEAD_PORT_OFFSET, else 0)
  --quiet              do not relay the servers' log lines`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      only: { type: 'string' },
      'port-offset': { type: 'string' },
      quiet: { type: 'boolean', default: false },
    });
    const offset = portOffsetOption(values['port-offset'], env.BULKHEAD_PORT_OFFSET);
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
    // A server over another system starts only when it knows where that system is; the others start regardless.
    const unset = (s: ServerManifest) =>
      s.upstreams.filter((u) => !env.passthrough[u.baseUrlEnv]).map((u) => u.baseUrlEnv);
    const waiting = servers.filter((s) => unset(s).length > 0);
    const needs = (s: ServerManifest) =>
      `${s.name} needs ${unset(s).join(' and ')} (the base URL of ${s.upstreams
        .filter((u) => unset(s).includes(u.baseUrlEnv))
        .map((u) => u.name)
        .join(' and ')}; its README: servers/${s.name}/README.md)`;
    if (values.only && waiting.length)
      throw new CliError(`cannot start ${waiting.map(needs).join('; ')}: set it and start again`);
    for (const s of waiting) io.err(`Not starting ${needs(s)}.`);
    servers = servers.filter((s) => !waiting.includes(s));
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
    let sealer: Sealer | undefined;
    let sealerSql: Sql | undefined;
    let catcher: MailCatcher | undefined;
    const stop = async (code: number) => {
      if (stopping) return;
      stopping = true;
      io.err('Stopping the servers...');
      await Promise.all(
        [...children.values()].map(
          (child) =>
            new Promise<void>((resolve) => {
              // A child ended by a signal has no exit code, only a signal code: both mean gone.
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              child.once('exit', () => resolve());
              child.kill('SIGTERM');
              setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
            }),
        ),
      );
      await sealer?.stop();
      await sealerSql?.end({ timeout: 2 });
      await catcher?.close();
      if (db.embedded) io.err('Stopping the embedded PostgreSQL...');
      const stopped = await db.close();
      if (db.embedded && !stopped)
        io.err('The embedded PostgreSQL keeps running: another process still uses it.');
      process.exit(code);
    };
    // `on`, not `once`: Ctrl-C reaches this process twice under `pnpm start` (from the terminal, and
    // relayed by pnpm), and a second SIGINT without a handler would kill it mid-stop.
    process.on('SIGINT', () => void stop(0));
    process.on('SIGTERM', () => void stop(0));

    const { applied } = await migrate(db.sql);
    if (applied.length) io.err(`Applied migrations: ${applied.join(', ')}`);
    for (const hook of startHooks) await hook({ sql: db.sql, env, io, embedded: db.embedded, servers });

    // Every server runs under its own login role, on the embedded default exactly as in production.
    const allowOwner = env.BULKHEAD_ALLOW_OWNER_ROLE;
    let urls: Record<string, string> = {};
    try {
      urls = await prepareEmbeddedRoles(db.adminUrl ?? db.url, env.BULKHEAD_DATA_DIR, deployableRoles(), [
        ...servers.map((s) => s.name),
        'sealer',
      ]);
    } catch (err) {
      if (!allowOwner)
        throw new CliError(
          `could not create the servers' roles (${(err as Error).message}): run \`bulkhead db roles\` as the schema owner, ` +
            'or set BULKHEAD_ALLOW_OWNER_ROLE=true to run every server under DATABASE_URL’s role (not for production)',
        );
      io.err('Running every server under DATABASE_URL’s role (BULKHEAD_ALLOW_OWNER_ROLE=true).');
    }
    const key = await auditKey(env, true);
    sealerSql = createSql(urls.sealer ?? db.url, { max: 2, applicationName: 'bulkhead-sealer' });
    sealer = startSealer(sealerSql, key!, {
      onError: (err) => io.err(`[sealer] ${err instanceof Error ? err.message : String(err)}`),
    });

    // Approved e-mails really leave: to BULKHEAD_SMTP_URL when given, else to a mail catcher on loopback,
    // whose e-mails the console shows on its "Sent mail" page.
    if (!env.BULKHEAD_SMTP_URL) {
      // Imported here: the SMTP server and the message parser would slow every other command's start.
      const { startMailCatcher } = await import('@bulkhead/core/mail-catcher');
      catcher = await startMailCatcher({ onMail: (mail) => storeCaughtMail(db.sql, mail) });
    }
    const mail = (server: (typeof servers)[number]) =>
      server.kind !== 'mcp'
        ? {}
        : {
            BULKHEAD_SMTP_URL: env.BULKHEAD_SMTP_URL ?? catcher!.url,
            BULKHEAD_MAIL_FROM: env.BULKHEAD_MAIL_FROM ?? `${server.name}@bulkhead.test`,
          };

    // MCP servers link approval notifications to the console that this start runs.
    const approvalConsole = servers.find((s) => s.kind === 'console');
    const consoleUrl = env.BULKHEAD_CONSOLE_URL ?? (approvalConsole && defaultUrl(approvalConsole));
    // The console is the OAuth authorization server of the MCP servers this start runs, and grants
    // tokens for them at the URLs they are served at.
    const oauth = (server: (typeof servers)[number]) =>
      server.kind === 'mcp'
        ? consoleUrl
          ? { BULKHEAD_AUTHORIZATION_SERVER: consoleUrl }
          : {}
        : {
            BULKHEAD_SERVER_URLS: servers
              .filter((s) => s.kind === 'mcp')
              .map((s) => `${s.name}=${defaultUrl(s).replace(/\/mcp$/, '')}`)
              .join(','),
          };
    for (const server of servers) {
      const child = spawn(process.execPath, ['--import', 'tsx', join(server.dir, 'src', 'main.ts')], {
        cwd: server.dir,
        env: {
          ...env.passthrough,
          DATABASE_URL: urls[server.name] ?? db.url,
          BULKHEAD_DATA_DIR: env.BULKHEAD_DATA_DIR,
          PORT: String(server.port),
          BULKHEAD_MIGRATE: 'false',
          LOG_LEVEL: env.serverLogLevel,
          ...(consoleUrl ? { BULKHEAD_CONSOLE_URL: consoleUrl } : {}),
          ...oauth(server),
          ...mail(server),
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
    const roles = new Map(
      (
        await db.sql<{ app: string; role: string }[]>`
          select distinct application_name as app, usename as role from pg_stat_activity
          where datname = current_database() and application_name like 'bulkhead-%'`
      ).map((r) => [r.app, r.role]),
    );
    io.out('');
    io.out('Bulkhead is running:');
    const width = nameWidth([...servers, ...waiting]);
    for (const s of servers)
      io.out(
        `  ${s.name.padEnd(width)} ${defaultUrl(s).padEnd(32)} as ${roles.get(`bulkhead-${s.name}`) ?? loginRole(s.name)}`,
      );
    io.out(
      `  ${'audit sealer'.padEnd(width)} ${''.padEnd(32)} as ${roles.get('bulkhead-sealer') ?? loginRole('sealer')}`,
    );
    for (const s of waiting)
      io.out(
        `  ${s.name.padEnd(width)} not started: set ${unset(s).join(' and ')} (servers/${s.name}/README.md)`,
      );
    if (catcher)
      io.out(`  ${'mail catcher'.padEnd(width)} ${catcher.url.padEnd(32)} (approved e-mails land here)`);
    io.out('');
    if (approvalConsole)
      io.out(
        `Approve gated actions at ${defaultUrl(approvalConsole)} with an approver token: pnpm bulkhead approvers add --person <who>.` +
          (catcher ? ` The e-mails they send show under Sent mail there.` : ''),
      );
    io.out(
      'Issue a token: pnpm bulkhead tokens issue --server <name> --label <who>. Ctrl-C stops everything.',
    );
    await new Promise(() => {});
    return 0;
  },
};
