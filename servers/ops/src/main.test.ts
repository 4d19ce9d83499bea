import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

it('refuses to start without Alertmanager’s URL, naming the variable', async () => {
  const env = { ...process.env };
  delete env.BULKHEAD_OPS_ALERTMANAGER_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect([code, stderr]).toEqual([
    1,
    'ops: invalid configuration:\n  BULKHEAD_OPS_ALERTMANAGER_URL: not set (upstream "alertmanager" reads it)\n',
  ]);
}, 30_000);
