import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';

// The files of infra/prometheus, checked by the tools of the Debian packages that run them
// (promtool, amtool), the rules by their unit tests (rules.test.yml), and the pipe they make: the
// shipped Prometheus configuration and rules, scraping a page with bulkhead_db_up 0, deliver
// BulkheadDatabaseDown to a real Alertmanager with the shipped alertmanager.yml, after its `for`.

const dir = import.meta.dirname;
const file = (name: string) => join(dir, name);

/** A binary of a Debian package, or a failure that says which package to install. */
function binary(path: string, pkg: string): string {
  if (!existsSync(path))
    throw new Error(`${path} is missing: install the Debian package ${pkg} (apt-get install ${pkg})`);
  return path;
}
const promtool = () => binary('/usr/bin/promtool', 'prometheus');
const amtool = () => binary('/usr/bin/amtool', 'prometheus-alertmanager');

function run(command: string, args: string[]): { code: number | null; output: string } {
  const r = spawnSync(command, args, { cwd: dir, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('infra/prometheus, checked by promtool and amtool', () => {
  it('promtool check config: prometheus.yml is valid and loads the one rules file', () => {
    const r = run(promtool(), ['check', 'config', 'prometheus.yml']);
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain('SUCCESS: 1 rule files found');
    expect(r.output).toContain('SUCCESS: 5 rules found');
  });

  it('promtool check rules: the five rules of bulkhead-rules.yml', () => {
    const r = run(promtool(), ['check', 'rules', 'bulkhead-rules.yml']);
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain('SUCCESS: 5 rules found');
  });

  it('promtool test rules: each rule fires after its `for` and not before (rules.test.yml)', () => {
    const r = run(promtool(), ['test', 'rules', 'rules.test.yml']);
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain('SUCCESS');
  });

  it('amtool check-config: alertmanager.yml has one route and one receiver', () => {
    const r = run(amtool(), ['check-config', 'alertmanager.yml']);
    expect(r.code, r.output).toBe(0);
    expect(r.output).toContain('SUCCESS');
    expect(r.output).toContain(' - 1 receivers');
  });
});

describe('Prometheus → Alertmanager with the shipped files', () => {
  const children: ChildProcess[] = [];
  let scratch = '';
  let page: Server | undefined;
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await new Promise<void>((resolve) => (page ? page.close(() => resolve()) : resolve()));
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  const freePort = () =>
    new Promise<number>((resolve, reject) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const { port } = s.address() as AddressInfo;
        s.close(() => resolve(port));
      });
    });

  /** Starts a binary, its output kept for the failure message; resolves once `url` answers 200. */
  async function start(command: string, args: string[], url: string): Promise<() => string> {
    let output = '';
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && child.exitCode === null) {
      const ok = await fetch(url).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return () => output;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(`${command} did not answer ${url}:\n${output.slice(-2000)}`);
  }

  it('a deployable reporting bulkhead_db_up 0 becomes BulkheadDatabaseDown in Alertmanager, from the shipped rules', async () => {
    const prometheus = binary('/usr/bin/prometheus', 'prometheus');
    const alertmanager = binary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');
    scratch = await mkdtemp(join(tmpdir(), 'bulkhead-prometheus-'));

    // What an admin server cut off from PostgreSQL serves on /metrics.
    page = createHttpServer((req, res) => {
      if (req.url !== '/metrics') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(
        '# HELP bulkhead_db_up Whether this scrape could read from the database (1) or not (0).\n' +
          '# TYPE bulkhead_db_up gauge\nbulkhead_db_up{server="admin"} 0\n',
      );
    });
    await new Promise<void>((resolve) => page!.listen(0, '127.0.0.1', resolve));
    const target = `127.0.0.1:${(page.address() as AddressInfo).port}`;

    const amPort = await freePort();
    const am = `http://127.0.0.1:${amPort}`;
    const amOutput = await start(
      alertmanager,
      [
        `--config.file=${file('alertmanager.yml')}`,
        `--storage.path=${join(scratch, 'alertmanager')}`,
        `--web.listen-address=127.0.0.1:${amPort}`,
        '--cluster.listen-address=',
      ],
      `${am}/-/ready`,
    );

    // The shipped configuration, pointed at this page and this Alertmanager; scraping and evaluating
    // each second so that the wait is the rule's own `for`, not the intervals.
    const config = parse(await readFile(file('prometheus.yml'), 'utf8')) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(config.rule_files).toEqual(['bulkhead-rules.yml']);
    config.global = { scrape_interval: '1s', evaluation_interval: '1s' };
    config.rule_files = [file('bulkhead-rules.yml')];
    config.alerting.alertmanagers[0].static_configs = [{ targets: [`127.0.0.1:${amPort}`] }];
    config.scrape_configs[0].static_configs = [{ targets: [target] }];
    await writeFile(join(scratch, 'prometheus.yml'), stringify(config));
    const promPort = await freePort();
    const promOutput = await start(
      prometheus,
      [
        `--config.file=${join(scratch, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(scratch, 'prometheus')}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
      ],
      `http://127.0.0.1:${promPort}/-/ready`,
    );

    // BulkheadDatabaseDown has `for: 1m`: it reaches Alertmanager a minute after the first scrape.
    type Alert = { labels: Record<string, string>; annotations: Record<string, string> };
    let alerts: Alert[] = [];
    const deadline = Date.now() + 150_000;
    while (Date.now() < deadline) {
      alerts = (await (await fetch(`${am}/api/v2/alerts`)).json()) as Alert[];
      if (alerts.length) break;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    expect(
      alerts.map((a) => ({ labels: a.labels, summary: a.annotations.summary })),
      `prometheus:\n${promOutput().slice(-1500)}\nalertmanager:\n${amOutput().slice(-1500)}`,
    ).toEqual([
      {
        labels: {
          alertname: 'BulkheadDatabaseDown',
          severity: 'critical',
          server: 'admin',
          job: 'bulkhead',
          instance: target,
        },
        summary: 'admin cannot read its database',
      },
    ]);
  }, 200_000);
});
