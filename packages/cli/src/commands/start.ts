import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { startSealer, type Forwarder, type Sealer } from '@bulkhead/audit';
import { shownUrl } from '@bulkhead/core/operator';
import type { MailCatcher } from '@bulkhead/core/mail-catcher';
import {
  createSql,
  isConnectionError,
  loginRole,
  migrate,
  openDatabase,
  setAllowSelfApproval,
  type Database,
  type Sql,
} from '@bulkhead/db';
import { prepareEmbeddedRoles } from '@bulkhead/db/embedded';
import { auditDestinations, startAuditForwarding } from '../audit-forward.ts';
import { auditKey, auditSigner, auditTimestamper } from '../audit-key.ts';
import { deployableRoles } from '../deployable-roles.ts';
import { parse, referenceOf, type Command } from '../command.ts';
import type { CliEnv } from '../env.ts';
import { CliError, UsageError, type Io } from '../io.ts';
import { defaultUrl, discoverServers, portOffsetOption, type ServerManifest } from '../servers.ts';
import { createLineRenderer, logDir, openLogFile, relayFormat } from './start-log.ts';
import { checkPorts } from './start-ports.ts';

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

/** The variables holding the base URLs of `server`'s upstreams that are not set. */
function unsetUpstreams(server: ServerManifest, env: CliEnv): string[] {
  return server.upstreams.filter((u) => !env.passthrough[u.baseUrlEnv]).map((u) => u.baseUrlEnv);
}

/**
 * The servers to start (`--only`, ports with the offset) and those waiting for the base URL of a
 * system they reach: a server over another system starts only when it knows where that system is;
 * the others start regardless. With `--only`, a waiting server stops the start instead.
 */
function chooseServers(
  values: { only?: string | undefined; 'port-offset'?: string | undefined },
  env: CliEnv,
  io: Io,
): { servers: ServerManifest[]; waiting: ServerManifest[]; offset: number } {
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
  const waiting = servers.filter((s) => unsetUpstreams(s, env).length > 0);
  const needs = (s: ServerManifest) =>
    `${s.name} needs ${unsetUpstreams(s, env).join(' and ')} (the base URL of ${s.upstreams
      .filter((u) => unsetUpstreams(s, env).includes(u.baseUrlEnv))
      .map((u) => u.name)
      .join(' and ')}; its README: servers/${s.name}/README.md)`;
  if (values.only && waiting.length)
    throw new CliError(`cannot start ${waiting.map(needs).join('; ')}: set it and start again`);
  for (const s of waiting) io.err(`Not starting ${needs(s)}.`);
  return { servers: servers.filter((s) => !waiting.includes(s)), waiting, offset };
}

/** What `start` runs and stops: the database, the servers' processes, the sealer and the mail catcher. */
interface Stack {
  /** The database, once asked for: a signal while it starts stops it when it is up. */
  opening?: Promise<Database>;
  children: Map<string, ChildProcess>;
  stopping: boolean;
  sealer?: Sealer;
  /** Forwards sealed events to the SIEM, when BULKHEAD_AUDIT_SYSLOG_URL or BULKHEAD_AUDIT_OCSF_FILE is set. */
  forwarder?: Forwarder;
  sealerSql?: Sql;
  catcher?: MailCatcher;
}

/** Stops the servers, then the sealer, the mail catcher and the database, and ends the process with `code`. */
async function stopStack(stack: Stack, io: Io, code: number): Promise<void> {
  if (stack.stopping) return;
  stack.stopping = true;
  io.err('Stopping the servers...');
  await Promise.all(
    [...stack.children.values()].map(
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
  await stack.sealer?.stop();
  await stack.forwarder?.stop();
  await stack.sealerSql?.end({ timeout: 2 });
  await stack.catcher?.close();
  const db = await stack.opening?.catch(() => undefined);
  if (!db) process.exit(code);
  if (db.embedded) io.err('Stopping the embedded PostgreSQL...');
  const stopped = await db.close();
  if (db.embedded && !stopped)
    io.err('The embedded PostgreSQL keeps running: another process still uses it.');
  process.exit(code);
}

/**
 * The login role URL of every server and the sealer: every server runs under its own login role, on
 * the embedded default exactly as in production. None (everyone under DATABASE_URL's role) only
 * with BULKHEAD_ALLOW_OWNER_ROLE.
 */
async function prepareRoles(
  db: Database,
  env: CliEnv,
  io: Io,
  servers: readonly ServerManifest[],
): Promise<Record<string, string>> {
  try {
    return await prepareEmbeddedRoles(db.adminUrl ?? db.url, env.BULKHEAD_DATA_DIR, deployableRoles(), [
      ...servers.map((s) => s.name),
      'sealer',
    ]);
  } catch (err) {
    if (!env.BULKHEAD_ALLOW_OWNER_ROLE)
      throw new CliError(
        `could not create the servers' roles (${(err as Error).message}): run \`bulkhead db roles\` as the schema owner, ` +
          'or set BULKHEAD_ALLOW_OWNER_ROLE=true to run every server under DATABASE_URL’s role (not for production)',
      );
    io.err('Running every server under DATABASE_URL’s role (BULKHEAD_ALLOW_OWNER_ROLE=true).');
    return {};
  }
}

/** What a server's process is started with beyond its own variables: where its database, console, mail are. */
interface ChildSettings {
  env: CliEnv;
  urls: Record<string, string>;
  dbUrl: string;
  consoleUrl: string | undefined;
  /** The audit key the sealer seals with: the console checks an event's seal with it. */
  auditKey: string;
  catcher: MailCatcher | undefined;
  servers: readonly ServerManifest[];
}

/** The environment of `server`'s process. */
function childEnv(server: ServerManifest, settings: ChildSettings): NodeJS.ProcessEnv {
  const { env, consoleUrl, servers } = settings;
  const mail =
    server.kind !== 'mcp'
      ? {}
      : {
          BULKHEAD_SMTP_URL: env.BULKHEAD_SMTP_URL ?? settings.catcher!.url,
          BULKHEAD_MAIL_FROM: env.BULKHEAD_MAIL_FROM ?? `${server.name}@bulkhead.test`,
        };
  // The console is the OAuth authorization server of the MCP servers this start runs, and grants
  // tokens for them at the URLs they are served at.
  const oauth =
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
  return {
    ...env.passthrough,
    DATABASE_URL: settings.urls[server.name] ?? settings.dbUrl,
    BULKHEAD_DATA_DIR: env.BULKHEAD_DATA_DIR,
    PORT: String(server.port),
    BULKHEAD_MIGRATE: 'false',
    LOG_LEVEL: env.serverLogLevel,
    ...(consoleUrl ? { BULKHEAD_CONSOLE_URL: consoleUrl } : {}),
    // The console (never an MCP server) checks an event's seal with the key the sealer uses.
    ...(server.kind === 'console' ? { BULKHEAD_AUDIT_KEY: settings.auditKey } : {}),
    ...oauth,
    ...mail,
  };
}

/** How many of a quiet server's last log lines `start` prints when the server exits on its own. */
const LAST_LINES = 20;

/**
 * Starts `server` as its own process, writes every line it prints to its log file, relays them to the
 * terminal (unless `quiet`; pretty on a TTY, stack traces left to the file), and stops everything when it exits.
 */
function spawnServer(server: ServerManifest, settings: ChildSettings, stack: Stack, io: Io, quiet: boolean) {
  if (stack.stopping) return;
  const file = openLogFile(settings.env.BULKHEAD_DATA_DIR, server.name);
  const format = relayFormat(process.stderr);
  const render = createLineRenderer(format, format === 'pretty' && !settings.env.NO_COLOR);
  const child = spawn(process.execPath, ['--import', 'tsx', join(server.dir, 'src', 'main.ts')], {
    cwd: server.dir,
    env: childEnv(server, settings),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  stack.children.set(server.name, child);
  // The last lines are kept even when quiet: a server that exits says why.
  const last: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      file.write(`${line}\n`);
      const shown = render(line);
      if (shown === null) return;
      if (!quiet) io.err(`[${server.name}] ${shown}`);
      else if (last.push(shown) > LAST_LINES) last.shift();
    });
  }
  child.once('close', () => file.end());
  // 'close', not 'exit': its output has been read to the end by then.
  child.once('close', (code, signal) => {
    if (stack.stopping) return;
    io.err(`${server.name} exited (${signal ?? `code ${code}`}); stopping everything.`);
    if (last.length > 0)
      io.err(
        `Its last lines (all of them in ${join(logDir(settings.env.BULKHEAD_DATA_DIR), `${server.name}.log`)}):\n` +
          last.map((line) => `[${server.name}] ${line}`).join('\n'),
      );
    void stopStack(stack, io, 1);
  });
}

/** Lists what runs, under which role each server is connected, what waits, and how to go on. */
async function printRunning(
  stack: Stack,
  env: CliEnv,
  io: Io,
  {
    servers,
    waiting,
    offset,
  }: { servers: readonly ServerManifest[]; waiting: readonly ServerManifest[]; offset: number },
): Promise<void> {
  const { catcher } = stack;
  const db = await stack.opening!;
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
      `  ${s.name.padEnd(width)} not started: set ${unsetUpstreams(s, env).join(' and ')} (servers/${s.name}/README.md)`,
    );
  if (catcher)
    // Its URL holds the password the servers send with: shown without it.
    io.out(
      `  ${'mail catcher'.padEnd(width)} ${shownUrl(catcher.url).padEnd(32)} (approved e-mails land here)`,
    );
  io.out('');
  // Every URL named here is one this start serves: with its offset, and the console's only when it runs.
  const offsetFlag = offset ? ` --port-offset ${offset}` : '';
  const approvalConsole = servers.find((s) => s.kind === 'console');
  if (approvalConsole)
    io.out(
      `Approve gated actions at ${defaultUrl(approvalConsole)} with an approver token: pnpm bulkhead approvers add --person <who>.` +
        (catcher ? ` The e-mails they send show under Sent mail there.` : ''),
    );
  else if (servers.some((s) => s.kind === 'mcp'))
    io.out('No console runs in this start: decide gated actions with pnpm bulkhead approvals list.');
  io.out(`Logs, stack traces included: ${logDir(env.BULKHEAD_DATA_DIR)}/<server>.log.`);
  io.out(
    `Issue a token: pnpm bulkhead tokens issue --server <name> --label <who>${offsetFlag}. Ctrl-C stops everything.`,
  );
}

export const startCommand: Command = {
  name: 'start',
  summary: 'start the database (embedded unless DATABASE_URL) and every server',
  help: `Usage: bulkhead start [--only <a,b>] [--port-offset <n>] [--quiet]

Starts the embedded PostgreSQL (unless DATABASE_URL is set), applies the
migrations, creates every deployable's group role with its grants and a login
role per server (passwords generated into the data dir), prepares the demo data
on a first start, then starts every server under servers/ as its own process on
its own port, connected under its own role, runs the audit sealer (which
forwards sealed events when BULKHEAD_AUDIT_SYSLOG_URL or BULKHEAD_AUDIT_OCSF_FILE
is set, as \`audit seal --follow\` does), and prints
the URLs and which role each server is connected as. Approved e-mails go to
a mail catcher on loopback (an SMTP server this command runs) and show on the
console's Sent mail page; with BULKHEAD_SMTP_URL set they go there instead.
Ctrl-C stops the servers, then the database. (With a DATABASE_URL whose role cannot create roles, run
\`bulkhead db roles\` as the owner first, or set BULKHEAD_ALLOW_OWNER_ROLE=true.)

A port a server needs that is taken stops the start before anything runs,
naming the port and the offset to start beside it with. The embedded
PostgreSQL is restarted when it dies (after 1 s, doubling up to 30 s, a line
each time); the servers reconnect by themselves. Every line the servers print
goes to <data dir>/logs/<server>.log (written afresh at each start); the
terminal shows them pretty on a TTY, JSON otherwise, without stack traces.

A server that reaches another system (bulkhead.upstreams in its package.json)
starts only when the variable holding that system's base URL is set, e.g.
BULKHEAD_OPS_ALERTMANAGER_URL for ops; without it the others start and the
listing says what is missing.

Options:
  --only <a,b>         start only these servers
  --port-offset <n>    add n to every server's port (a second stack beside the first;
                       default BULKHEAD_PORT_OFFSET, else 0)
  --quiet              do not relay the servers' log lines

Reference: ${referenceOf('start')}.`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      only: { type: 'string' },
      'port-offset': { type: 'string' },
      quiet: { type: 'boolean', default: false },
    });
    const stack: Stack = { children: new Map(), stopping: false };
    // First of all: a Ctrl-C at any moment stops what runs so far, and the start with it. `on`, not `once`:
    // Ctrl-C reaches this process twice under `pnpm start` (from the terminal, and relayed by pnpm), and a
    // second SIGINT without a handler would kill it mid-stop.
    process.on('SIGINT', () => void stopStack(stack, io, 0));
    process.on('SIGTERM', () => void stopStack(stack, io, 0));
    /** A start-up step; once a signal began the stop, the start goes no further (stopStack ends the process). */
    const step = async <T>(work: Promise<T>): Promise<T> => {
      const done = await work.then(
        (value) => ({ value }),
        (err: unknown) => ({ err }),
      );
      if (stack.stopping) await new Promise(() => {});
      if ('err' in done) throw done.err;
      return done.value;
    };

    const chosen = chooseServers(values, env, io);
    const { servers } = chosen;
    await step(checkPorts(servers, chosen.offset));
    io.err(
      env.DATABASE_URL
        ? 'Using DATABASE_URL.'
        : `Starting the embedded PostgreSQL (data in ${env.BULKHEAD_DATA_DIR})...`,
    );
    stack.opening = openDatabase({
      ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {}),
      dataDir: env.BULKHEAD_DATA_DIR,
      applicationName: 'bulkhead-start',
      max: 4,
      log: (line) => io.err(line),
      // Restarted when it dies (killed, out of memory or disk), a line each time; the servers reconnect.
      supervise: (line) => {
        if (!stack.stopping) io.err(line);
      },
    });
    const db = await step(stack.opening);

    const { applied } = await step(migrate(db.sql));
    if (applied.length) io.err(`Applied migrations: ${applied.join(', ')}`);
    // The switch lives in a table only the owner writes, so that no login can flip it from its session.
    await step(setAllowSelfApproval(db.sql, env.BULKHEAD_ALLOW_SELF_APPROVAL));
    for (const hook of startHooks) await step(hook({ sql: db.sql, env, io, embedded: db.embedded, servers }));

    const urls = await step(prepareRoles(db, env, io, servers));
    const key = await step(auditKey(env, true));
    stack.sealerSql = createSql(urls.sealer ?? db.url, { max: 2, applicationName: 'bulkhead-sealer' });
    const signer = await step(auditSigner(env));
    const timestamp = auditTimestamper(env, signer, (line) => io.err(`[sealer] ${line}`));
    const sealerSql = stack.sealerSql;
    const destinations = await step(auditDestinations(env));
    if (destinations.length)
      stack.forwarder = startAuditForwarding(sealerSql, destinations, {
        err: (line) => io.err(`[forwarder] ${line}`),
        progress: () => {},
      });
    stack.sealer = startSealer(stack.sealerSql, key!, {
      signer,
      onSeal: () => {
        if (timestamp) void timestamp(sealerSql);
        stack.forwarder?.nudge();
      },
      // While the embedded database is away, the supervisor's lines say so: not the sealer's every try.
      onError: (err) => {
        if (db.embedded && isConnectionError(err)) return;
        io.err(`[sealer] ${err instanceof Error ? err.message : String(err)}`);
      },
    });

    // Approved e-mails really leave: to BULKHEAD_SMTP_URL when given, else to a mail catcher on loopback,
    // whose e-mails the console shows on its "Sent mail" page.
    if (!env.BULKHEAD_SMTP_URL) {
      // Imported here: the SMTP server and the message parser would slow every other command's start.
      const { startApprovalMailCatcher } = await step(import('@bulkhead/core/mail-catcher'));
      stack.catcher = await step(startApprovalMailCatcher(db.sql));
    }

    // MCP servers link approval notifications to the console that this start runs.
    const approvalConsole = servers.find((s) => s.kind === 'console');
    const consoleUrl = env.BULKHEAD_CONSOLE_URL ?? (approvalConsole && defaultUrl(approvalConsole));
    const settings = {
      env,
      urls,
      dbUrl: db.url,
      consoleUrl,
      auditKey: key!,
      catcher: stack.catcher,
      servers,
    };
    for (const server of servers) spawnServer(server, settings, stack, io, values.quiet);
    const healthy = await step(Promise.all(servers.map((s) => waitHealthy(s, stack.children.get(s.name)!))));
    const failed = servers.filter((_, i) => !healthy[i]);
    if (failed.length) {
      io.err(`Did not come up: ${failed.map((s) => s.name).join(', ')}.`);
      // A server that exited has begun the stop already: the start waits for it to end the process.
      await step(stopStack(stack, io, 1));
      return 1;
    }
    await step(printRunning(stack, env, io, chosen));
    await new Promise(() => {});
    return 0;
  },
};
