import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { CLI_REFERENCE_BEGIN, cliReferencePage } from '@bulkhead/cli/reference';
import { expect, it } from 'vitest';
import { root } from './helpers.ts';

const page = readFileSync(`${root}docs/cli.md`, 'utf8');

it('docs/cli.md holds exactly what `pnpm docs:cli` writes from the commands’ --help', async () => {
  expect(page).toContain(CLI_REFERENCE_BEGIN);
  expect(await cliReferencePage(page), 'docs/cli.md: run pnpm docs:cli').toBe(page);
});

it('shows what the built command prints, and the command points at the page', () => {
  const cli = (...args: string[]) =>
    spawnSync('node', [`${root}packages/cli/bin/bulkhead.mjs`, ...args], { cwd: root, encoding: 'utf8' });
  for (const args of [['--help'], ['tokens', '--help'], ['tokens', 'issue', '--help'], ['start', '--help']]) {
    const run = cli(...args);
    expect(run.status, run.stderr).toBe(0);
    expect(page).toContain(['```text', run.stdout.trimEnd(), '```'].join('\n'));
  }
  expect(cli('--help').stdout).toContain('Reference: docs/cli.md');
  expect(cli('tokens', '--help').stdout).toContain('Reference: docs/cli.md#bulkhead-tokens');
});
