import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** The binary of the Debian package prometheus-alertmanager (Alertmanager 0.25). */
export const ALERTMANAGER_BINARY = '/usr/bin/prometheus-alertmanager';

const READY_TIMEOUT_MS = 15_000;

// One route to one receiver without integrations: alerts are grouped and kept, nothing is sent.
const CONFIG = `route:
  receiver: ops-test
  group_by: [alertname]
receivers:
  - name: ops-test
inhibit_rules:
  - source_matchers: [severity="critical"]
    target_matchers: [severity="warning"]
    equal: [service]
`;

/** An alert as `POST /api/v2/alerts` takes it. */
export interface PostableAlert {
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  startsAt?: string;
  endsAt?: string;
  generatorURL?: string;
}

/** A real Alertmanager on 127.0.0.1, started for a test. */
export interface TestAlertmanager {
  url: string;
  postAlerts(alerts: PostableAlert[]): Promise<void>;
  /** Every silence, as its own API lists it. */
  silences(): Promise<{ id: string; status: { state: string }; comment: string; createdBy: string }[]>;
  /** Stops the process (SIGTERM, then SIGKILL); its silences stay in the storage path. */
  stop(): Promise<void>;
  /** Starts it again on the same port and storage; posted alerts are gone, silences kept. */
  restart(): Promise<void>;
  /** Freezes the process (SIGSTOP): it accepts connections and answers nothing, as a hung server does. */
  pause(): void;
  /** Lets a paused process run on (SIGCONT). */
  resume(): void;
  /** Stops it and removes its storage. */
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts /usr/bin/prometheus-alertmanager on a free loopback port, with no clustering, a temporary
 * storage path and a configuration whose one receiver sends nothing; resolves once `/-/ready` answers.
 * An inhibition rule lets a `severity="critical"` alert inhibit a `warning` one of the same `service`.
 */
export async function startAlertmanager(): Promise<TestAlertmanager> {
  if (!existsSync(ALERTMANAGER_BINARY))
    throw new Error(
      `${ALERTMANAGER_BINARY} is missing: install the Debian package prometheus-alertmanager (apt-get install prometheus-alertmanager)`,
    );
  const dir = await mkdtemp(join(tmpdir(), 'bulkhead-alertmanager-'));
  const config = join(dir, 'alertmanager.yml');
  await writeFile(config, CONFIG);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  async function start(): Promise<void> {
    let stderr = '';
    const proc = spawn(
      ALERTMANAGER_BINARY,
      [
        `--config.file=${config}`,
        `--storage.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--cluster.listen-address=',
        `--web.external-url=${url}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    proc.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
    child = proc;
    let gone = false;
    exited = new Promise((resolve) =>
      proc.once('exit', () => {
        gone = true;
        resolve();
      }),
    );
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (gone) throw new Error(`Alertmanager exited at start: ${stderr}`);
      const ready = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) return;
      if (Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`Alertmanager was not ready within ${READY_TIMEOUT_MS} ms: ${stderr}`);
      }
      await sleep(50);
    }
  }

  async function stop(): Promise<void> {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill('SIGCONT');
    proc.kill('SIGTERM');
    const killed = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(killed);
  }

  async function api(path: string, init?: RequestInit): Promise<Response> {
    const res = await fetch(`${url}${path}`, { ...init, signal: AbortSignal.timeout(5000) });
    if (!res.ok) throw new Error(`Alertmanager ${path}: HTTP ${res.status} ${await res.text()}`);
    return res;
  }

  await start();
  return {
    url,
    async postAlerts(alerts) {
      await api('/api/v2/alerts', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(alerts),
      });
    },
    async silences() {
      return (await api('/api/v2/silences')).json() as ReturnType<TestAlertmanager['silences']>;
    },
    stop,
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
    async restart() {
      await stop();
      await start();
    },
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
