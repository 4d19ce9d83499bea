import { describe, expect, it } from 'vitest';
import { missingNeeds, planSystem, SYSTEM_NEEDS, type SystemNeed } from './system.ts';

const need = (name: string) => SYSTEM_NEEDS.find((n) => n.package === name)!;
const prometheus = need('prometheus');
const alertmanager = need('prometheus-alertmanager');
const source = need('golang-github-prometheus-alertmanager-dev');
const procps = need('procps');

describe('what the suite needs from the system', () => {
  it('is Prometheus, Alertmanager and its source, rsyslog with TLS, git, openssl and ps, each by its Debian package', () => {
    expect(SYSTEM_NEEDS.map((n) => n.package)).toEqual([
      'prometheus',
      'prometheus-alertmanager',
      'golang-github-prometheus-alertmanager-dev',
      'rsyslog',
      'rsyslog-openssl',
      'git',
      'openssl',
      'procps',
    ]);
  });

  it('is missing when one file or command of a package is', () => {
    const present = new Set(['/usr/bin/prometheus', '/usr/bin/prometheus-alertmanager', '/usr/bin/amtool']);
    const missing = missingNeeds(
      SYSTEM_NEEDS,
      (path) => present.has(path),
      (command) => command !== 'ps',
    );
    expect(missing.map((n: SystemNeed) => n.package)).toEqual([
      'prometheus',
      'golang-github-prometheus-alertmanager-dev',
      'rsyslog',
      'rsyslog-openssl',
      'procps',
    ]);
  });

  it('is met on this machine, which runs the suite', () => {
    expect(missingNeeds().map((n) => n.package)).toEqual([]);
  });
});

describe('before the suite', () => {
  it('runs it when nothing is missing, as any user', () => {
    expect(planSystem({ missing: [], root: false, aptGet: false })).toEqual({ action: 'run' });
  });

  it('installs what is missing as root with apt-get', () => {
    expect(planSystem({ missing: [prometheus, procps], root: true, aptGet: true })).toEqual({
      action: 'install',
      packages: ['prometheus', 'procps'],
    });
  });

  it('names the apt-get command, and the services to stop, to a user who is not root', () => {
    expect(planSystem({ missing: [prometheus, alertmanager, source], root: false, aptGet: true })).toEqual({
      action: 'refuse',
      sentence:
        'The tests need prometheus, prometheus-alertmanager and golang-github-prometheus-alertmanager-dev from Debian\'s packages, which pnpm test installs itself only as root: run "sudo apt-get update && sudo apt-get install -y prometheus prometheus-alertmanager golang-github-prometheus-alertmanager-dev" (then "sudo systemctl disable --now prometheus prometheus-node-exporter prometheus-alertmanager": the tests start their own), or pnpm test as root.',
    });
    expect(planSystem({ missing: [procps], root: false, aptGet: true })).toEqual({
      action: 'refuse',
      sentence:
        'The tests need procps from Debian\'s packages, which pnpm test installs itself only as root: run "sudo apt-get update && sudo apt-get install -y procps", or pnpm test as root.',
    });
  });

  it('names the files and commands on a machine without apt-get, even as root', () => {
    expect(planSystem({ missing: [alertmanager, procps], root: true, aptGet: false })).toEqual({
      action: 'refuse',
      sentence:
        "The tests need /usr/bin/prometheus-alertmanager and /usr/bin/amtool (Debian's prometheus-alertmanager) and ps on the PATH (Debian's procps), which pnpm test installs itself only on Debian or Ubuntu as root: install them, or set BULKHEAD_TEST_SYSTEM=skip to run the suite without them (the tests that use them fail).",
    });
  });
});
