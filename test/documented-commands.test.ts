import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { commandHelps } from '@bulkhead/cli/reference';
import { describe, expect, it } from 'vitest';
import {
  PNPM_OWN_COMMANDS,
  commandProblem,
  commandsInHelp,
  commandsInMarkdown,
  documentedMarkdown,
  loadWorkspace,
} from './documented-commands.ts';
import { root } from './helpers.ts';

// Every `pnpm …` a reader is told to run (the READMEs, docs/, infra's pages and every `bulkhead`
// command's --help) runs what it says with the pinned pnpm: a script that exists, a bin, a
// `bulkhead` command that answers --help, or one of pnpm's own commands meant as such.

const helps = await commandHelps();
const workspace = loadWorkspace(root, helps.keys());
const documented = [
  ...documentedMarkdown(root).flatMap((file) =>
    commandsInMarkdown(file, readFileSync(`${root}${file}`, 'utf8')),
  ),
  ...[...helps].flatMap(([words, help]) =>
    commandsInHelp(`bulkhead ${words ? `${words} ` : ''}--help`, help),
  ),
];

it('every documented pnpm command runs what it says with the pinned pnpm', () => {
  const problems = documented.flatMap(({ where, command }) => {
    const problem = commandProblem(command, workspace);
    return problem ? [`${where}: pnpm ${command}: ${problem}`] : [];
  });
  expect(problems).toEqual([]);
});

it('reads the commands from the docs and from every command’s --help', () => {
  const from = (where: string) => documented.filter((c) => c.where === where).map((c) => c.command);
  expect(from('bulkhead tokens --help')).toEqual(['docs:dev']);
  expect(from('bulkhead new server --help')).toEqual(['start', 'install']);
  expect(documentedMarkdown(root)).toEqual(
    expect.arrayContaining(['README.md', 'docs/cli.md', 'servers/customer/README.md', 'infra/README.md']),
  );
  expect(documentedMarkdown(root).filter((f) => f.startsWith('docs/.vitepress/'))).toEqual([]);
});

it('knows every name the pinned pnpm keeps for a command of its own', () => {
  const pinned = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { packageManager: string })
    .packageManager;
  const run = spawnSync('pnpm', ['help'], { cwd: root, encoding: 'utf8' });
  expect(run.status, run.stderr).toBe(0);
  const listed = run.stdout
    .split(/^Commands:\n/m)[1]!
    .split('\n\n')[0]!
    .split('\n')
    .flatMap((line) => {
      const m = /^ {2}(\S+)\s.*?(?:\[alias(?:es)?: ([^\]]+)\])?$/.exec(line);
      return m ? [m[1]!, ...(m[2]?.split(', ') ?? [])] : [];
    });
  expect(listed.sort(), `PNPM_OWN_COMMANDS: the commands of ${pinned}`).toEqual(
    [...PNPM_OWN_COMMANDS].sort(),
  );
});

describe('the check', () => {
  it('refuses a script, a bin or a package that does not exist', () => {
    expect(commandProblem('nosuchscript', workspace)).toBe(
      'no script "nosuchscript" in package.json, and no bin of that name',
    );
    expect(commandProblem('run nosuchscript', workspace)).toBe('no script "nosuchscript" in package.json');
    expect(commandProblem('--filter customer nosuchscript', workspace)).toBe(
      `no script "nosuchscript" in customer's package.json, and no bin of that name`,
    );
    expect(commandProblem('--filter nosuchpackage start', workspace)).toBe(
      '--filter nosuchpackage: no workspace package of that name',
    );
    expect(commandProblem('exec nosuchbin --version', workspace)).toBe(
      'no bin `nosuchbin` in node_modules/.bin (pnpm install adds the bins of the dependencies)',
    );
  });

  it('refuses pnpm’s own command where a script is meant', () => {
    expect(commandProblem('docs', workspace)).toBe(
      "`pnpm docs` is pnpm's own command, not a script (`pnpm run docs` runs the script)",
    );
    expect(commandProblem('run docs', workspace)).toBeNull();
    expect(commandProblem('docs:dev', workspace)).toBeNull();
  });

  it('refuses a bulkhead command that has no --help', () => {
    expect(commandProblem('bulkhead nosuch', workspace)).toBe(
      '`bulkhead nosuch` is no command (`bulkhead --help` lists them)',
    );
    expect(commandProblem('bulkhead tokens isue --server admin', workspace)).toBe(
      '`bulkhead tokens isue` is no command (`bulkhead tokens --help` lists them)',
    );
    expect(commandProblem('exec bulkhead audit nosuch', workspace)).toBe(
      '`bulkhead audit nosuch` is no command (`bulkhead audit --help` lists them)',
    );
    expect(commandProblem('bulkhead kb ingest docs/handbook --prune', workspace)).toBeNull();
    expect(commandProblem('--dir <repo> bulkhead tokens list', workspace)).toBeNull();
  });

  it('takes pnpm’s own commands as meant, and runs the scripts pnpm test and pnpm start run', () => {
    for (const command of ['install', 'add -D zod', 'fetch', 'test', 'start -- --port-offset 1000'])
      expect(commandProblem(command, workspace), command).toBeNull();
    expect(commandProblem('--filter dev-knowledge start', workspace)).toBeNull();
    expect(commandProblem('--filter @bulkhead/core start', workspace)).toBe(
      'no script "start" in @bulkhead/core\'s package.json for `pnpm start` to run',
    );
  });
});

describe('the extraction', () => {
  it('takes commands from code blocks and code spans, not from prose', () => {
    const markdown = [
      'Built with pnpm workspaces; pnpm-lock.yaml pins them. Run `pnpm bulkhead tokens list`',
      '(or `pnpm exec bulkhead …`).',
      '',
      '```sh',
      'pnpm install && pnpm nosuchscript   # a made-up script',
      'BULKHEAD_TOKEN=x pnpm --filter admin start\\',
      '```',
      'A span over two lines: `pnpm',
      'lint`.',
    ].join('\n');
    const found = commandsInMarkdown('x.md', markdown);
    expect(found).toEqual([
      { where: 'x.md:5', command: 'install' },
      { where: 'x.md:5', command: 'nosuchscript' },
      { where: 'x.md:6', command: '--filter admin start' },
      { where: 'x.md:1', command: 'bulkhead tokens list' },
      { where: 'x.md:2', command: 'exec bulkhead …' },
      { where: 'x.md:8', command: 'lint' },
    ]);
    expect(found.map((c) => commandProblem(c.command, workspace))).toEqual([
      null,
      'no script "nosuchscript" in package.json, and no bin of that name',
      null,
      null,
      null,
      null,
    ]);
  });

  it('takes commands from the code spans and the plain text of a --help', () => {
    const help = [
      'Nothing else changes: pnpm start, the CLI and the tests find it. Then run pnpm install, as printed.',
      '  --port-offset <n>    the offset it was started with (pnpm start',
      'Reference: docs/cli.md (`pnpm docs:dev` serves it).',
    ].join('\n');
    expect(commandsInHelp('h', help).map((c) => c.command)).toEqual([
      'docs:dev',
      'start',
      'install',
      'start',
    ]);
  });
});
