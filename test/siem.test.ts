import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectTestClient, issueTestToken } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { devKnowledgeServer } from '../servers/dev-knowledge/src/server.ts';
import { freePort, root, spawnServer, type ServerProcess } from './helpers.ts';
import { makeCertificates, rsyslogOnLoopback, type Rsyslog } from './rsyslog.ts';

// Issue 49, "a stream into the SIEM": a real rsyslog on loopback (imtcp over TLS, OpenSSL driver) receives
// every event of 1,000 calls exactly once and in order, although it is stopped for 10 s in the middle and
// the forwarder (`bulkhead audit seal --follow`) is restarted once; the OCSF file gets the same events.

/**
 * What OCSF 1.2.0 requires of an API Activity event (class_uid 6003; events/application/api.json, which
 * extends application.json and base_event.json, with includes/classification.json and occurrence.json),
 * and of the objects it requires: metadata (objects/metadata.json: product, version), product
 * (objects/product.json: vendor_name), api (objects/api.json: operation), and the "at least one of"
 * constraints of actor (objects/actor.json) and src_endpoint (objects/network_endpoint.json).
 */
const REQUIRED = [
  'activity_id',
  'category_uid',
  'class_uid',
  'type_uid',
  'time',
  'severity_id',
  'metadata',
  'actor',
  'api',
  'src_endpoint',
];
const REQUIRED_IN: Record<string, string[]> = { metadata: ['product', 'version'], api: ['operation'] };
const AT_LEAST_ONE: Record<string, string[]> = {
  actor: ['process', 'user', 'invoked_by', 'session', 'app_name', 'app_uid'],
  src_endpoint: [
    'ip',
    'uid',
    'name',
    'hostname',
    'svc_name',
    'instance_uid',
    'interface_uid',
    'interface_name',
  ],
};

/** Why `event` is no valid OCSF API Activity event, or nothing. */
function ocsfProblems(event: Record<string, unknown>): string[] {
  const problems = REQUIRED.filter((f) => event[f] === undefined || event[f] === null).map((f) => `no ${f}`);
  for (const [object, fields] of Object.entries(REQUIRED_IN))
    for (const f of fields)
      if ((event[object] as Record<string, unknown> | undefined)?.[f] == null)
        problems.push(`no ${object}.${f}`);
  const product = (event.metadata as { product?: { vendor_name?: unknown } } | undefined)?.product;
  if (typeof product?.vendor_name !== 'string') problems.push('no metadata.product.vendor_name');
  for (const [object, fields] of Object.entries(AT_LEAST_ONE))
    if (!fields.some((f) => (event[object] as Record<string, unknown> | undefined)?.[f] != null))
      problems.push(`${object} has none of ${fields.join(', ')}`);
  if (event.class_uid !== 6003 || event.category_uid !== 6) problems.push('not class 6003 of category 6');
  if (event.type_uid !== 6003 * 100 + (event.activity_id as number))
    problems.push('type_uid is not class_uid × 100 + activity_id');
  if (!Number.isInteger(event.time)) problems.push('time is no timestamp in ms');
  return problems;
}

let db: TestDatabase;
let dir: string;
let rsyslog: Rsyslog;
let server: ServerProcess;
let syslogUrl: string;
let forwarderEnv: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`
    insert into kb_documents (id, title, kind, tags, body, source_path, content_hash, updated_on, ingested_at)
    values ('guide-siem', 'Sending audit events to the SIEM', 'guide', '{audit}', 'Forward them.', 'guide-siem.md',
      'h', '2026-12-01', now())`;
  dir = await mkdtemp(join(tmpdir(), 'bulkhead-siem-'));
  const certs = await makeCertificates(dir);
  const port = await freePort();
  syslogUrl = `tls://127.0.0.1:${port}`;
  rsyslog = await rsyslogOnLoopback(dir, port, certs);
  await rsyslog.start();
  server = await spawnServer('dev-knowledge', (await db.as('dev-knowledge')).url, {
    BULKHEAD_RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
  });
  forwarderEnv = {
    // The sealer's own login, as in a deployment: it seals and forwards, and may not migrate.
    DATABASE_URL: (await db.as('sealer')).url,
    BULKHEAD_MIGRATE: 'false',
    BULKHEAD_DATA_DIR: join(dir, 'data'),
    BULKHEAD_AUDIT_KEY: 's'.repeat(43),
    BULKHEAD_AUDIT_SYSLOG_URL: syslogUrl,
    BULKHEAD_AUDIT_SYSLOG_CA_FILE: certs.ca,
    BULKHEAD_AUDIT_OCSF_FILE: join(dir, 'events.ocsf.jsonl'),
  };
});
afterAll(async () => {
  await server?.stop();
  await rsyslog?.stop();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

/** `bulkhead audit seal --follow` as its own process, as a deployment runs it; resolves once it runs. */
async function startForwarder(): Promise<{
  child: ChildProcess;
  output(): string;
  stop(): Promise<string>;
}> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', `${root}packages/cli/src/main.ts`, 'audit', 'seal', '--follow', '--interval', '200'],
    { cwd: root, env: { ...process.env, ...forwarderEnv }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let err = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      if (err.includes('until Ctrl-C.')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`audit seal --follow exited (${code}): ${err}`)));
  });
  return {
    child,
    output: () => err,
    stop: () =>
      new Promise<string>((resolve) => {
        child.removeAllListeners('exit');
        child.once('exit', () => resolve(err));
        child.kill('SIGTERM');
      }),
  };
}

/** The lag of each destination, as the server's /metrics shows it. */
async function metricsLag(): Promise<Record<string, number>> {
  const text = await (await fetch(new URL('/metrics', server.url))).text();
  const lag: Record<string, number> = {};
  for (const m of text.matchAll(
    /^bulkhead_audit_forward_lag_events\{[^}]*destination="([^"]+)"[^}]*\} (\d+)$/gm,
  ))
    lag[m[1]!] = Number(m[2]);
  return lag;
}

/** Waits until every event is sealed and `destinations` have acknowledged all of them (a row, not a clock). */
async function caughtUp(destinations: string[]): Promise<void> {
  for (let tries = 0; ; tries++) {
    const [backlog] = await db.sql<{ unsealed: string }[]>`select unsealed from bulkhead_audit_backlog()`;
    const lag = await db.sql<{ destination: string; lag: string }[]>`
      select destination, lag from bulkhead_audit_forward_lag() where destination = any (${destinations})`;
    if (
      Number(backlog!.unsealed) === 0 &&
      lag.length === destinations.length &&
      lag.every((l) => l.lag === '0')
    )
      return;
    if (tries > 1200) throw new Error(`not caught up: ${JSON.stringify({ backlog, lag })}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

it(
  'every event of 1,000 calls reaches rsyslog exactly once and in order, across a 10 s outage of rsyslog and a restart of Bulkhead',
  { timeout: 300_000 },
  async () => {
    const ocsf = `ocsf:${forwarderEnv.BULKHEAD_AUDIT_OCSF_FILE}`;
    const syslog = `syslog:${syslogUrl}`;
    const client = await connectTestClient(server.url, await issueTestToken(db.sql, devKnowledgeServer));
    let made = 0;
    const calls = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const result = await client.callTool({ name: 'list_docs', arguments: { limit: 1 + (made % 50) } });
        expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
        made++;
      }
    };
    let forwarder = await startForwarder();

    await calls(300);
    await caughtUp([syslog, ocsf]);
    // Stopped between batches, as `systemctl stop rsyslog` would; the calls go on, as fast as before.
    await rsyslog.stop();
    const down = Date.now();
    await calls(300);
    // Sealed while the receiver is away: the OCSF file keeps up, syslog's lag shows on /metrics.
    await caughtUp([ocsf]);
    for (;;) {
      const lag = await metricsLag();
      if ((lag[syslog] ?? 0) > 0 && lag[ocsf] === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, Math.max(0, 10_000 - (Date.now() - down))));
    await rsyslog.start();
    await calls(200);
    // The forwarder takes again once its retry, at most 5 s after the last failure, finds rsyslog back
    // (a line, not a clock: stopped before that, it would have no reason to say so).
    for (let tries = 0; !forwarder.output().includes(`forwarding to ${syslog} again`); tries++) {
      if (tries > 600) throw new Error(`the forwarder did not take again: ${forwarder.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    // Bulkhead's forwarder restarted once, while calls go on.
    const during = calls(200);
    const firstRun = await forwarder.stop();
    expect(firstRun).toContain(`forwarding to ${syslog} failed, retrying from its last acknowledged event`);
    expect(firstRun).toContain(`forwarding to ${syslog} again`);
    forwarder = await startForwarder();
    await during;
    expect(made).toBe(1000);

    await caughtUp([syslog, ocsf]);
    expect(await metricsLag()).toEqual({ [syslog]: 0, [ocsf]: 0 });
    await forwarder.stop();
    await rsyslog.stop();

    // The truth: every event in the order the seals list them.
    const sealed = (
      await db.sql<{ seq: string }[]>`
        select e.seq::text as seq from audit_seals, unnest(seqs) with ordinality as e(seq, i) order by seal_no, i`
    ).map((r) => Number(r.seq));
    const [counted] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from audit_events where method = 'tools/call'`;
    expect(counted!.n).toBe(1000);
    expect(sealed).toHaveLength((await db.sql`select seq from audit_events`).length);

    const received = (await readFile(rsyslog.file, 'utf8')).trimEnd().split('\n');
    const viaSyslog = received.map((line) => {
      // rsyslog's reading of the RFC 5424 header: <PRI>, version 1, APP-NAME and MSGID as sent.
      const m = /^<(\d+)> 1 bulkhead audit \uFEFF?(\{.*\})$/.exec(line);
      expect(m, line.slice(0, 200)).not.toBeNull();
      expect(Math.floor(Number(m![1]) / 8)).toBe(13);
      const event = JSON.parse(m![2]!) as Record<string, unknown> & { metadata: { sequence: number } };
      expect(ocsfProblems(event)).toEqual([]);
      return event.metadata.sequence;
    });
    expect(viaSyslog).toEqual(sealed);

    const lines = (await readFile(forwarderEnv.BULKHEAD_AUDIT_OCSF_FILE!, 'utf8')).trimEnd().split('\n');
    const events = lines.map(
      (l) => JSON.parse(l) as Record<string, unknown> & { metadata: { sequence: number } },
    );
    expect(events.flatMap((e) => ocsfProblems(e).map((p) => `#${e.metadata.sequence}: ${p}`))).toEqual([]);
    expect(events.map((e) => e.metadata.sequence)).toEqual(sealed);
    const calls1000 = events.filter((e) => (e.api as { operation: string }).operation === 'list_docs');
    expect(calls1000).toHaveLength(1000);
    expect(calls1000[0]).toMatchObject({
      class_uid: 6003,
      activity_id: 99,
      status_id: 1,
      status_code: 'ok',
      actor: { app_name: 'bulkhead-test/1.0.0', user: { name: 'test client' } },
    });
  },
);
