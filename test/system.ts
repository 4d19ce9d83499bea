/**
 * What the suite needs from the system beyond Node and `pnpm install`, and how `pnpm test` (and
 * `pnpm test:busy`) get it before running anything: present, nothing happens; missing on Debian as
 * root, apt-get installs it (and the services its packages start are stopped: the tests start their
 * own on loopback); missing otherwise, one sentence names exactly what to install and the suite does
 * not start. Chromium is not among them: a system one is used where there is one, else the one that
 * `pnpm install` brings (`@sparticuz/chromium`, packages/core/src/testing/browser.ts).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** A Debian package the suite needs, found by its files. */
export interface SystemNeed {
  /** The Debian package that brings it. */
  package: string;
  /** Absolute paths the tests use as they are. */
  files?: string[];
  /** Commands the tests run from the PATH. */
  commands?: string[];
  /** Services the package starts on install, which the tests do not want running. */
  services?: string[];
}

/**
 * Prometheus and Alertmanager for infra/prometheus's tests and the ops server's (each runs its own on
 * loopback), Alertmanager's Go source for its API document, rsyslog for the SIEM stream's test, and the
 * commands other tests run.
 */
export const SYSTEM_NEEDS: readonly SystemNeed[] = [
  {
    package: 'prometheus',
    files: ['/usr/bin/prometheus', '/usr/bin/promtool'],
    services: ['prometheus', 'prometheus-node-exporter'],
  },
  {
    package: 'prometheus-alertmanager',
    files: ['/usr/bin/prometheus-alertmanager', '/usr/bin/amtool'],
    services: ['prometheus-alertmanager'],
  },
  {
    package: 'golang-github-prometheus-alertmanager-dev',
    files: ['/usr/share/gocode/src/github.com/prometheus/alertmanager'],
  },
  // A syslog receiver over TLS for test/siem.test.ts (imtcp with the OpenSSL network stream driver).
  { package: 'rsyslog', files: ['/usr/sbin/rsyslogd'], services: ['rsyslog'] },
  // Its module (lmnsd_ossl.so) lies in an architecture's folder: found by the package's copyright file.
  { package: 'rsyslog-openssl', files: ['/usr/share/doc/rsyslog-openssl/copyright'] },
  { package: 'git', commands: ['git'] },
  { package: 'openssl', commands: ['openssl'] },
  { package: 'procps', commands: ['ps'] },
];

/** What decides the plan: the needs not met, and whether this process can install them. */
export interface SystemFacts {
  missing: readonly SystemNeed[];
  root: boolean;
  /** apt-get on the PATH of a Linux machine. */
  aptGet: boolean;
}

/** Run the suite, install first, or stop with a sentence that says what to install. */
export type SystemPlan =
  { action: 'run' } | { action: 'install'; packages: string[] } | { action: 'refuse'; sentence: string };

/** The needs of `needs` this machine does not meet. */
export function missingNeeds(
  needs: readonly SystemNeed[] = SYSTEM_NEEDS,
  exists: (path: string) => boolean = existsSync,
  onPath: (command: string) => boolean = commandOnPath,
): SystemNeed[] {
  return needs.filter((need) => !(need.files ?? []).every(exists) || !(need.commands ?? []).every(onPath));
}

/** Decides what `pnpm test` does before the suite, from what is missing and who runs it. */
export function planSystem(facts: SystemFacts): SystemPlan {
  if (facts.missing.length === 0) return { action: 'run' };
  const packages = facts.missing.map((need) => need.package);
  if (facts.aptGet && facts.root) return { action: 'install', packages };
  if (facts.aptGet) {
    const services = facts.missing.flatMap((need) => need.services ?? []);
    const stop = services.length
      ? ` (then "sudo systemctl disable --now ${services.join(' ')}": the tests start their own)`
      : '';
    return {
      action: 'refuse',
      sentence: `The tests need ${list(packages)} from Debian's packages, which pnpm test installs itself only as root: run "sudo apt-get update && sudo apt-get install -y ${packages.join(' ')}"${stop}, or pnpm test as root.`,
    };
  }
  const wanted = facts.missing.map(
    (need) =>
      `${list([...(need.files ?? []), ...(need.commands ?? []).map((c) => `${c} on the PATH`)])} (Debian's ${need.package})`,
  );
  return {
    action: 'refuse',
    sentence: `The tests need ${list(wanted)}, which pnpm test installs itself only on Debian or Ubuntu as root: install them, or set BULKHEAD_TEST_SYSTEM=skip to run the suite without them (the tests that use them fail).`,
  };
}

/**
 * Before the suite: `mode` is BULKHEAD_TEST_SYSTEM (unset: check, and install as root; `skip`: run
 * without checking). Returns the sentence to print when the suite must not run.
 */
export function prepareSystem(
  mode: string | undefined,
  log: (line: string) => void,
  needs: readonly SystemNeed[] = SYSTEM_NEEDS,
): string | undefined {
  if (mode === 'skip') return undefined;
  if (mode !== undefined && mode !== '')
    return `BULKHEAD_TEST_SYSTEM: "skip" to run the suite without checking the system, or unset; not "${mode}".`;
  const missing = missingNeeds(needs);
  const plan = planSystem({
    missing,
    root: process.getuid?.() === 0,
    aptGet: process.platform === 'linux' && commandOnPath('apt-get'),
  });
  if (plan.action === 'run') return undefined;
  if (plan.action === 'refuse') return plan.sentence;
  log(`installing ${plan.packages.join(', ')} from Debian's packages (apt-get, once)`);
  const failed = install(plan.packages);
  stopServices(missing.flatMap((need) => need.services ?? []));
  if (failed) return failed;
  const still = missingNeeds(missing);
  if (still.length)
    return `apt-get installed ${plan.packages.join(' ')}, yet ${list(still.flatMap((n) => [...(n.files ?? []), ...(n.commands ?? [])]))} cannot be found: install what brings them yourself, or set BULKHEAD_TEST_SYSTEM=skip.`;
  return undefined;
}

/** apt-get update, then install; its output is shown only when it fails. Returns the failure's sentence. */
function install(packages: string[]): string | undefined {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', ...packages],
  ]) {
    const run = spawnSync('apt-get', args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (run.status !== 0) {
      process.stderr.write(`${run.stdout ?? ''}${run.stderr ?? ''}`);
      return `"apt-get ${args.join(' ')}" failed (exit ${run.status ?? run.signal ?? run.error?.message}): see its output above, or install ${packages.join(' ')} yourself.`;
    }
  }
  return undefined;
}

/**
 * Debian's packages start their own services on install (Prometheus a node exporter with it): the
 * tests need none of them. Without an init system the daemons may still run, as the packages' own
 * system user `prometheus` (the tests run theirs as the invoking user): those, and only those, are
 * stopped too.
 */
function stopServices(services: string[]): void {
  for (const service of services) {
    const disabled = spawnSync('systemctl', ['disable', '--now', service], { stdio: 'ignore' });
    if (disabled.status !== 0) spawnSync('service', [service, 'stop'], { stdio: 'ignore' });
  }
  if (!services.length) return;
  // The kernel keeps 15 characters of a process name.
  for (const name of new Set(services.map((s) => s.slice(0, 15))))
    spawnSync('pkill', ['-u', 'prometheus', '-x', name], { stdio: 'ignore' });
}

function commandOnPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    if (!dir) return false;
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** "a", "a and b", "a, b and c". */
function list(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}
