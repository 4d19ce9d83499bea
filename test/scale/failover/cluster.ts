import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../helpers.ts';
import { haproxyStats } from '../haproxy-stats.ts';

// Issue 27, item 2: a real HA PostgreSQL on loopback, from the system packages — one etcd member,
// three Patroni nodes each managing a PostgreSQL 15, and HAProxy in front sending connections to
// whichever node Patroni's REST API calls the primary (GET /primary answers 200 on the leader only).

export const PATRONI = '/usr/bin/patroni';
export const ETCD = '/usr/bin/etcd';
export const HAPROXY = '/usr/sbin/haproxy';
export const PG_BIN = '/usr/lib/postgresql/15/bin';

/** What is missing to run the failover test, as one sentence, or null. */
export function missingTools(): string | null {
  const absent = [PATRONI, ETCD, HAPROXY, `${PG_BIN}/postgres`].filter((p) => !existsSync(p));
  return absent.length
    ? `${absent.join(', ')} absent: install Patroni, etcd, HAProxy and PostgreSQL 15 (Debian: apt-get install patroni etcd-server haproxy postgresql-15) to run test/scale/failover.test.ts`
    : null;
}

/** Patroni's view of one member (GET /cluster). */
export interface Member {
  name: string;
  role: 'leader' | 'replica' | 'sync_standby' | string;
  state: string;
  lag?: number | string;
  timeline?: number;
}

export interface PatroniNode {
  name: string;
  pgPort: number;
  restPort: number;
  dataDir: string;
  child: ChildProcess | null;
}

export interface Cluster {
  nodes: PatroniNode[];
  /** The superuser's URL through HAProxy (always the primary), to `database`. */
  url(database?: string): string;
  /** A superuser URL straight to one node, bypassing HAProxy. */
  nodeUrl(node: PatroniNode, database?: string): string;
  members(): Promise<Member[]>;
  /** The current leader's node, once Patroni has one that runs. */
  leader(): Promise<PatroniNode | undefined>;
  /** The pid of a node's postmaster (its postmaster.pid), or null when it is not running. */
  postmasterPid(node: PatroniNode): number | null;
  /** Starts (or restarts, after a kill) a node's Patroni. */
  startNode(node: PatroniNode): void;
  /** kill -9 of the node's Patroni, its postmaster and every backend: the machine is gone. */
  killNode(node: PatroniNode): Promise<void>;
  /** PATCH /config of the cluster (Patroni's dynamic configuration, kept in etcd). */
  patchConfig(body: Record<string, unknown>): Promise<void>;
  /** HAProxy's status of each node's server line (UP, DOWN). */
  proxyStatus(): Promise<Record<string, string>>;
  output(): string;
  stop(): Promise<void>;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PASSWORD = 'bulkhead-failover';

function uidOf(user: string): { uid: number; gid: number } {
  const [uid, gid] = ['-u', '-g'].map((f) => Number(execFileSync('id', [f, user]).toString().trim()));
  return { uid: uid!, gid: gid! };
}

function patroniYaml(
  dir: string,
  node: PatroniNode,
  etcdPort: number,
  dcs: { ttl: number; loopWait: number; retryTimeout: number },
): string {
  return `scope: bulkhead
name: ${node.name}
log:
  level: WARNING
restapi:
  listen: 127.0.0.1:${node.restPort}
  connect_address: 127.0.0.1:${node.restPort}
etcd3:
  hosts: 127.0.0.1:${etcdPort}
bootstrap:
  dcs:
    ttl: ${dcs.ttl}
    loop_wait: ${dcs.loopWait}
    retry_timeout: ${dcs.retryTimeout}
    # Large enough that a lagging asynchronous standby may still be promoted: what async replication loses is shown, not hidden.
    maximum_lag_on_failover: 1073741824
    synchronous_mode: false
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 400
        wal_sender_timeout: 5s
        wal_receiver_timeout: 5s
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 trust
    - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:${node.pgPort}
  connect_address: 127.0.0.1:${node.pgPort}
  data_dir: ${node.dataDir}
  bin_dir: ${PG_BIN}
  pgpass: ${join(dir, `${node.name}.pgpass`)}
  authentication:
    superuser:
      username: postgres
      password: ${PASSWORD}
    replication:
      username: replicator
      password: ${PASSWORD}
  parameters:
    unix_socket_directories: ${dir}
    shared_buffers: 32MB
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
`;
}

function haproxyCfg(port: number, statsPort: number, nodes: PatroniNode[]): string {
  return [
    'global',
    '  maxconn 2000',
    'defaults',
    '  mode tcp',
    '  timeout connect 1s',
    '  timeout client 30m',
    '  timeout server 30m',
    '  timeout check 1s',
    'frontend pg',
    `  bind 127.0.0.1:${port}`,
    '  default_backend primary',
    'backend primary',
    '  option httpchk GET /primary',
    '  http-check expect status 200',
    // A node that stops being the primary has its sessions closed at once: no client keeps writing to a demoted node.
    '  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions',
    ...nodes.map((n) => `  server ${n.name} 127.0.0.1:${n.pgPort} check port ${n.restPort}`),
    'listen stats',
    '  mode http',
    `  bind 127.0.0.1:${statsPort}`,
    '  stats enable',
    '  stats uri /stats',
    '',
  ].join('\n');
}

/** Starts etcd, three Patroni nodes and HAProxy, and waits until a leader serves through HAProxy. */
export async function startCluster(dcs = { ttl: 10, loopWait: 1, retryTimeout: 4 }): Promise<Cluster> {
  const dir = await mkdtemp(join(tmpdir(), 'bulkhead-failover-'));
  const pg = uidOf('postgres');
  chownSync(dir, pg.uid, pg.gid);
  const children: ChildProcess[] = [];
  let out = '';
  const capture = (tag: string, child: ChildProcess) => {
    children.push(child);
    child.stdout?.on('data', (d: Buffer) => (out += `[${tag}] ${d.toString()}`));
    child.stderr?.on('data', (d: Buffer) => (out += `[${tag}] ${d.toString()}`));
  };
  const [etcdClient, etcdPeer, proxyPort, statsPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  const nodes: PatroniNode[] = [];
  for (const name of ['n1', 'n2', 'n3'])
    nodes.push({
      name,
      pgPort: await freePort(),
      restPort: await freePort(),
      dataDir: join(dir, name),
      child: null,
    });

  const etcdDir = join(dir, 'etcd');
  mkdirSync(etcdDir, { mode: 0o700 });
  capture(
    'etcd',
    spawn(
      ETCD,
      [
        '--name=e1',
        `--data-dir=${etcdDir}`,
        `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
        `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
        `--initial-cluster=e1=http://127.0.0.1:${etcdPeer}`,
        '--log-level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    ),
  );
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${etcdClient}/health`)).ok) break;
    } catch {
      // not yet listening
    }
    if (i > 100) throw new Error(`etcd did not come up: ${out}`);
    await pause(100);
  }

  for (const n of nodes) {
    const file = join(dir, `${n.name}.yml`);
    await writeFile(file, patroniYaml(dir, n, etcdClient, dcs));
    chownSync(file, pg.uid, pg.gid);
  }
  const startNode = (n: PatroniNode) => {
    const child = spawn(PATRONI, [join(dir, `${n.name}.yml`)], {
      uid: pg.uid,
      gid: pg.gid,
      cwd: dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8' },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: the postmaster it starts is killed with it in stop().
      detached: true,
    });
    capture(n.name, child);
    n.child = child;
  };
  // The first node bootstraps alone (initdb), the others then clone it with pg_basebackup.
  startNode(nodes[0]!);

  await writeFile(join(dir, 'haproxy.cfg'), haproxyCfg(proxyPort, statsPort, nodes));
  capture(
    'haproxy',
    spawn(HAPROXY, ['-f', join(dir, 'haproxy.cfg'), '-db'], { stdio: ['ignore', 'pipe', 'pipe'] }),
  );

  const rest = (n: PatroniNode, path: string, init?: RequestInit) =>
    fetch(`http://127.0.0.1:${n.restPort}${path}`, { ...init, signal: AbortSignal.timeout(2000) });
  const members = async (): Promise<Member[]> => {
    for (const n of nodes) {
      try {
        const r = await rest(n, '/cluster');
        if (r.ok) return ((await r.json()) as { members: Member[] }).members;
      } catch {
        // that node is down: ask the next
      }
    }
    return [];
  };
  const leader = async () => {
    const m = (await members()).find((x) => x.role === 'leader' && x.state === 'running');
    return m && nodes.find((n) => n.name === m.name);
  };
  const postmasterPid = (n: PatroniNode) => {
    try {
      return Number(readFileSync(join(n.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    } catch {
      return null;
    }
  };
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  const cluster: Cluster = {
    nodes,
    url: (database = 'postgres') => `postgres://postgres:${PASSWORD}@127.0.0.1:${proxyPort}/${database}`,
    nodeUrl: (n, database = 'postgres') =>
      `postgres://postgres:${PASSWORD}@127.0.0.1:${n.pgPort}/${database}`,
    members,
    leader,
    postmasterPid,
    startNode,
    async killNode(n) {
      const pid = postmasterPid(n);
      // Its backends too, as when the machine dies: left alone they would run on until they notice.
      const backends = pid
        ? spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
            .stdout.split('\n')
            .filter(Boolean)
            .map(Number)
        : [];
      n.child?.kill('SIGKILL');
      for (const p of [pid, ...backends]) if (p && alive(p)) process.kill(p, 'SIGKILL');
      for (let i = 0; i < 50 && pid && alive(pid); i++) await pause(20);
    },
    async patchConfig(body) {
      const n = (await leader()) ?? nodes[0]!;
      const r = await rest(n, '/config', {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!r.ok) throw new Error(`PATCH /config: ${r.status} ${await r.text()}`);
    },
    async proxyStatus() {
      const rows = await haproxyStats(statsPort);
      return Object.fromEntries(
        rows
          .filter((r) => r.pxname === 'primary' && nodes.some((n) => n.name === r.svname))
          .map((r) => [r.svname!, r.status!]),
      );
    },
    output: () => out,
    async stop() {
      for (const n of nodes) {
        const pid = postmasterPid(n);
        if (n.child?.pid) {
          try {
            process.kill(-n.child.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
        if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
      }
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await pause(300);
      await rm(dir, { recursive: true, force: true });
    },
  };

  try {
    await waitFor(async () => (await leader())?.name === 'n1', 60_000, 'n1 to bootstrap as leader', cluster);
    startNode(nodes[1]!);
    startNode(nodes[2]!);
    await waitFor(
      async () =>
        (await members()).filter((m) => m.state === 'streaming' || m.state === 'running').length === 3,
      90_000,
      'three members running',
      cluster,
    );
    await waitFor(
      async () => Object.values(await cluster.proxyStatus()).filter((s) => s === 'UP').length === 1,
      15_000,
      'HAProxy to see one primary',
      cluster,
    );
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/** Polls `check` every 100 ms until it holds, or throws after `ms` with what the cluster said. */
export async function waitFor(
  check: () => Promise<boolean>,
  ms: number,
  what: string,
  cluster?: Cluster,
): Promise<void> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for ${what}${last ? ` (last: ${String(last)})` : ''}${cluster ? `: ${JSON.stringify(await cluster.members().catch(() => []))}\n${cluster.output().slice(-4000)}` : ''}`,
      );
    await pause(100);
  }
}
