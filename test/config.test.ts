import { spawnSync } from 'node:child_process';
import { expect, it } from 'vitest';
import { root } from './helpers.ts';

it('a server with a bad environment does not start and says why, one line per problem', () => {
  const run = spawnSync(process.execPath, ['--import', 'tsx', `${root}servers/dev-knowledge/src/main.ts`], {
    cwd: root,
    env: { ...process.env, PORT: '99999', HOST: '', BULKHEAD_MAX_BODY_BYTES: 'lots' },
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(run.status).toBe(1);
  const lines = run.stderr.trim().split('\n');
  expect(lines[0]).toBe('dev-knowledge: invalid configuration:');
  expect(
    lines
      .slice(1)
      .map((l) => l.trim().split(':')[0])
      .sort(),
  ).toEqual(['BULKHEAD_MAX_BODY_BYTES', 'PORT']);
});
