import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../root.ts';
import { runCli } from '../run-cli.ts';
import { discoverServers } from '../servers.ts';

// The refusals of `bulkhead new server`, against this repository: each is refused before anything is
// written. Creating a server, and everything that must hold of it, is test/new-server.test.ts's work
// (in a copy of the repository).

const highest = Math.max(...discoverServers().map((s) => s.port));

describe('bulkhead new server refuses, writing nothing', () => {
  it.each([
    [['new', 'server'], 'give the server a name, e.g. bulkhead new server billing-reports'],
    [
      ['new', 'server', 'Billing_Reports'],
      '"Billing_Reports" is not a server name: lower-case letters, digits and single hyphens, starting with a letter, at most 40 characters (e.g. billing-reports)',
    ],
    [
      ['new', 'server', 'billing--reports'],
      '"billing--reports" is not a server name: lower-case letters, digits and single hyphens, starting with a letter, at most 40 characters (e.g. billing-reports)',
    ],
    [
      ['new', 'server', 'sealer'],
      '"sealer" is a name the stack uses for itself (sealer, owner, jobs, cli, setup, postgres, demo-data, bulkhead, test, infra); choose another',
    ],
    [['new', 'server', 'a', 'b'], 'one name, not 2: a b'],
    [
      ['new', 'server', 'reports', '--port', '80'],
      `--port: a whole number from 1024 to 65535, e.g. ${highest + 1}`,
    ],
    [
      ['new', 'server', 'reports', '--port', 'x'],
      `--port: a whole number from 1024 to 65535, e.g. ${highest + 1}`,
    ],
    [
      ['new', 'server', 'reports', '--description', 'two\nlines'],
      '--description: one line of at most 200 characters, without backticks',
    ],
    [['new', 'server', 'reports', '--gated'], "Unknown option '--gated'"],
    [
      ['new', 'server', 'reports', '--upstream', 'alerts'],
      '--upstream alerts: expected <name>=<base URL variable>, e.g. alerts=ALERTS_URL (a lower-case name; the variable in capitals)',
    ],
  ])('usage: %j', async (args, message) => {
    const run = await runCli(args);
    expect([run.code, run.stdout, run.stderr]).toEqual([
      2,
      '',
      `bulkhead new: ${message}\nRun \`bulkhead new --help\` for usage.\n`,
    ]);
  });

  it('a folder that exists, or a port another server has', async () => {
    const taken = await runCli(['new', 'server', 'dev-knowledge']);
    expect([taken.code, taken.stderr]).toEqual([
      1,
      'bulkhead new: servers/dev-knowledge exists already: choose another name, or remove the folder first\n',
    ]);
    const port = await runCli(['new', 'server', 'reports', '--port', '3102']);
    expect([port.code, port.stderr]).toEqual([
      1,
      `bulkhead new: port 3102 is customer's (servers/customer/package.json); choose another, e.g. --port ${highest + 1}\n`,
    ]);
    expect(existsSync(join(repoRoot, 'servers', 'reports'))).toBe(false);
    expect(existsSync(join(repoRoot, 'infra', 'k8s', 'overlays', 'reports'))).toBe(false);
  });

  it('--help says what it writes and what it takes', async () => {
    const run = await runCli(['new', 'server', '--help']);
    expect(run.code).toBe(0);
    for (const line of [
      'Usage: bulkhead new server <name> [--port <n>] [--customer-bound] [--upstream <name>=<base URL variable>] [--description <text>] [--json]',
      '  servers/<name>/package.json    the manifest, its one source of truth: port, scopes,',
      '  infra/docker/compose.yaml     its service, its login role in setup, its password secret',
      '  --customer-bound       every token of it is bound to one customer (tokens issue',
    ])
      expect(run.stdout).toContain(line);
    const group = await runCli(['new']);
    expect([group.code, group.stdout]).toEqual([
      2,
      [
        'Usage: bulkhead new <command> [options]',
        '',
        'scaffold a new bounded server',
        '',
        'Commands:',
        '  server       scaffold a new bounded MCP server and its deployment entries',
        '',
        'Run `bulkhead new <command> --help` for the options of one command.',
        'Reference: docs/cli.md#bulkhead-new (`pnpm docs:dev` serves it).',
        '',
      ].join('\n'),
    ]);
  });
});
