import { describe, expect, it } from 'vitest';
import { dropPnpmSeparator } from './command.ts';
import { runCli } from './run-cli.ts';
import { discoverServers } from './servers.ts';

describe('the -- that pnpm 12 passes through', () => {
  it('is dropped when only command words stand before it, and left after an option', () => {
    expect(dropPnpmSeparator(['start', '--', '--port-offset', '1000'])).toEqual([
      'start',
      '--port-offset',
      '1000',
    ]);
    expect(dropPnpmSeparator(['tokens', 'list', '--', '--server', 'x'])).toEqual([
      'tokens',
      'list',
      '--server',
      'x',
    ]);
    expect(dropPnpmSeparator(['--', 'tokens', 'revoke', 'abc'])).toEqual(['tokens', 'revoke', 'abc']);
    expect(dropPnpmSeparator(['kb', 'ingest', '--dry-run', '--', '-folder'])).toEqual([
      'kb',
      'ingest',
      '--dry-run',
      '--',
      '-folder',
    ]);
    expect(dropPnpmSeparator(['tokens', 'list'])).toEqual(['tokens', 'list']);
  });

  it('reaches `start` and `tokens list` as the options after it (the real binary)', async () => {
    // A bad offset proves the option was read as an option, and starts nothing.
    const start = await runCli(['start', '--', '--port-offset', 'x']);
    expect(start.code).toBe(2);
    expect(start.stderr).toBe(
      'bulkhead start: --port-offset: a whole number from 0 to 60000\nRun `bulkhead start --help` for usage.\n',
    );
    const list = await runCli(['tokens', 'list', '--', '--server', 'no-such-server']);
    expect(list.code).toBe(2);
    const mcp = discoverServers().filter((s) => s.kind === 'mcp');
    expect(list.stderr).toContain(
      `bulkhead tokens: --server: unknown server "no-such-server"; one of: ${mcp.map((s) => s.name).join(', ')}\n`,
    );
  });
});
