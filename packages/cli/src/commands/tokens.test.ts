import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../root.ts';
import { runCli } from '../run-cli.ts';

/** One client's configuration as `tokens issue` prints it: the indented lines under "<client> — …:". */
function snippet(stdout: string, client: string): string {
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) => l.startsWith(`${client} — `));
  expect(at, `${client} in the output`).toBeGreaterThan(-1);
  const body: string[] = [];
  for (const line of lines.slice(at + 1)) {
    if (!line.startsWith('  ')) break;
    body.push(line.slice(2));
  }
  return body.join('\n');
}

/** The server address variables unset, so that the machine's own PORT or HOST does not leak in. */
const noAddress = {
  PORT: undefined,
  HOST: undefined,
  BULKHEAD_PUBLIC_URL: undefined,
  BULKHEAD_PORT_OFFSET: undefined,
};

const cliBin = fileURLToPath(new URL('../../bin/bulkhead.mjs', import.meta.url));

let db: TestDatabase;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  db = await createTestDatabase();
  env = { ...noAddress, DATABASE_URL: db.url, BULKHEAD_OPERATOR: 'ops:ana' };
  await db.sql`insert into customers (id, name, email) values ('C-1001', 'Nordlicht GmbH', 'billing@nordlicht.example')`;
});
afterAll(async () => {
  await db.drop();
});

describe('bulkhead tokens', () => {
  it('issues a token once, as JSON, with every scope of the server by default', async () => {
    const run = await runCli(
      ['tokens', 'issue', '--server', 'dev-knowledge', '--label', 'Claude Code on Ana’s laptop', '--json'],
      env,
    );
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(Object.keys(out)).toEqual([
      'id',
      'token',
      'server',
      'label',
      'scopes',
      'customer_id',
      'expires_at',
      'owner',
    ]);
    expect(out).toMatchObject({
      server: 'dev-knowledge',
      label: 'Claude Code on Ana’s laptop',
      scopes: ['docs:read'],
      customer_id: null,
      owner: null,
    });
    expect(out.token).toMatch(new RegExp(`^bh_dev-knowledge_${out.id}_[A-Za-z0-9_-]{43}$`));
    const days = (new Date(out.expires_at).getTime() - Date.now()) / 86_400_000;
    expect(Math.round(days)).toBe(90);
    const [row] = await db.sql`select secret_hash, created_by from bulkhead_tokens where id = ${out.id}`;
    expect(row!.created_by).toBe('ops:ana');
    expect(Buffer.from(row!.secret_hash).length).toBe(32);
    // The secret is the 43 characters after the id (base64url: it may itself contain `_`).
    expect(JSON.stringify(await db.sql`select * from bulkhead_tokens`)).not.toContain(out.token.slice(-43));
  });

  it('prints client configuration for Claude Code, Claude Desktop, Cursor and VS Code', async () => {
    const run = await runCli(
      ['tokens', 'issue', '--server', 'dev-knowledge', '--label', 'vs code', '--expires', 'never'],
      env,
    );
    expect(run.code).toBe(0);
    const token = /^ {2}(bh_\S+)$/m.exec(run.stdout)![1]!;
    expect(run.stdout).toContain(
      `claude mcp add --transport http dev-knowledge http://127.0.0.1:3103/mcp --header "Authorization: Bearer ${token}"`,
    );
    expect(JSON.parse(snippet(run.stdout, 'Cursor'))).toEqual({
      mcpServers: {
        'dev-knowledge': { url: 'http://127.0.0.1:3103/mcp', headers: { Authorization: `Bearer ${token}` } },
      },
    });
    expect(run.stdout).toContain('Expires: never.');
  });

  it('keeps the secret out of .vscode/mcp.json and out of mcp-remote’s arguments', async () => {
    const run = await runCli(['tokens', 'issue', '--server', 'dev-knowledge', '--label', 'desk'], env);
    expect(run.code).toBe(0);
    const token = /^ {2}(bh_\S+)$/m.exec(run.stdout)![1]!;
    const vscode = snippet(run.stdout, 'VS Code');
    expect(vscode).not.toContain(token);
    expect(JSON.parse(vscode)).toEqual({
      inputs: [
        {
          type: 'promptString',
          id: 'bulkhead-dev-knowledge-token',
          description: 'Bulkhead token for dev-knowledge (bh_dev-knowledge_…)',
          password: true,
        },
      ],
      servers: {
        'dev-knowledge': {
          type: 'http',
          url: 'http://127.0.0.1:3103/mcp',
          headers: { Authorization: 'Bearer ${input:bulkhead-dev-knowledge-token}' },
        },
      },
    });
    expect(run.stdout).toContain(
      'VS Code — .vscode/mcp.json (no secret in the file: VS Code asks for the token once and keeps it):',
    );
    expect(JSON.parse(snippet(run.stdout, 'Claude Desktop'))).toEqual({
      mcpServers: {
        'dev-knowledge': {
          command: 'npx',
          args: ['-y', 'mcp-remote', 'http://127.0.0.1:3103/mcp', '--header', 'Authorization:${AUTH_HEADER}'],
          env: { AUTH_HEADER: `Bearer ${token}` },
        },
      },
    });
  });

  it('names the server’s real URL: --port-offset, BULKHEAD_PORT_OFFSET, PORT, HOST, BULKHEAD_PUBLIC_URL, --url', async () => {
    const cases: [string[], Record<string, string>, string][] = [
      [['--port-offset', '1000'], {}, 'http://127.0.0.1:4103/mcp'],
      [[], { BULKHEAD_PORT_OFFSET: '1000' }, 'http://127.0.0.1:4103/mcp'],
      [[], { PORT: '8443', HOST: 'kb.internal' }, 'http://kb.internal:8443/mcp'],
      [[], { BULKHEAD_PUBLIC_URL: 'https://kb.example.com' }, 'https://kb.example.com/mcp'],
      [['--url', 'https://other.example/mcp'], { PORT: '1' }, 'https://other.example/mcp'],
    ];
    for (const [args, extra, url] of cases) {
      const run = await runCli(['tokens', 'issue', '--server', 'dev-knowledge', '--label', 'url', ...args], {
        ...env,
        ...extra,
      });
      expect({ args, extra, code: run.code }).toEqual({ args, extra, code: 0 });
      const token = /^ {2}(bh_\S+)$/m.exec(run.stdout)![1]!;
      expect(snippet(run.stdout, 'Claude Code')).toBe(
        `claude mcp add --transport http dev-knowledge ${url} --header "Authorization: Bearer ${token}"`,
      );
      for (const client of ['Claude Desktop', 'Cursor', 'VS Code'])
        expect(snippet(run.stdout, client), `${client} with ${JSON.stringify({ args, extra })}`).toContain(
          `"${url}"`,
        );
    }
    // mcp-remote speaks plain HTTP to a host other than localhost only when told to.
    const remote = await runCli(['tokens', 'issue', '--server', 'dev-knowledge', '--label', 'lan'], {
      ...env,
      HOST: 'kb.internal',
    });
    expect(JSON.parse(snippet(remote.stdout, 'Claude Desktop')).mcpServers['dev-knowledge'].args).toEqual([
      '-y',
      'mcp-remote',
      'http://kb.internal:3103/mcp',
      '--allow-http',
      '--header',
      'Authorization:${AUTH_HEADER}',
    ]);
    const rotated = await runCli(
      ['tokens', 'rotate', /^Issued token (\w+)/.exec(remote.stdout)![1]!, '--port-offset', '1000'],
      env,
    );
    expect(snippet(rotated.stdout, 'Cursor')).toContain('"http://127.0.0.1:4103/mcp"');
  });

  it('finds the servers from any working directory: main.ts run elsewhere, and pnpm --dir <repo>', async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), 'bulkhead-cwd-'));
    try {
      const direct = await runCli(
        ['tokens', 'issue', '--server', 'admin', '--label', 'from elsewhere', '--json'],
        env,
        elsewhere,
      );
      expect(direct.stderr).toBe('');
      expect(JSON.parse(direct.stdout)).toMatchObject({ server: 'admin', label: 'from elsewhere' });
      const viaPnpm = spawnSync(
        'pnpm',
        [
          '--dir',
          repoRoot,
          'bulkhead',
          'tokens',
          'issue',
          '--server',
          'admin',
          '--label',
          'pnpm --dir',
          '--json',
        ],
        { cwd: elsewhere, env: { ...process.env, ...env, LOG_LEVEL: 'warn' }, encoding: 'utf8' },
      );
      // pnpm runs the bin (`pnpm exec`: the root has no `bulkhead` script), and adds nothing of its own.
      expect(viaPnpm.stderr).toBe('');
      expect(viaPnpm.status).toBe(0);
      expect(JSON.parse(viaPnpm.stdout)).toMatchObject({ server: 'admin', label: 'pnpm --dir' });
      // A failing command: its own message, its own exit code, no ELIFECYCLE or ERR_PNPM after it.
      const failing = spawnSync(
        'pnpm',
        ['--dir', repoRoot, 'bulkhead', 'tokens', 'issue', '--server', 'nosuch'],
        {
          cwd: elsewhere,
          env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
          encoding: 'utf8',
        },
      );
      expect(failing.status).toBe(2);
      expect(failing.stdout).toBe('');
      expect(failing.stderr).toMatch(
        /^bulkhead tokens: --server: unknown server "nosuch"; one of: admin, [^\n]+\nRun `bulkhead tokens --help` for usage\.\n$/,
      );
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it('lists without secrets, revokes and rotates', async () => {
    const issued = JSON.parse(
      (
        await runCli(
          [
            'tokens',
            'issue',
            '--server',
            'dev-knowledge',
            '--label',
            'rotate me',
            '--expires',
            '30d',
            '--json',
          ],
          env,
        )
      ).stdout,
    );
    const listed = JSON.parse(
      (await runCli(['tokens', 'list', '--server', 'dev-knowledge', '--json'], env)).stdout,
    );
    const mine = listed.find((t: { id: string }) => t.id === issued.id);
    expect(mine).toMatchObject({ label: 'rotate me', state: 'active', last_used_at: null, revoked_at: null });
    expect(mine.token).toBeUndefined();

    const rotated = JSON.parse((await runCli(['tokens', 'rotate', issued.id, '--json'], env)).stdout);
    expect(rotated).toMatchObject({
      server: 'dev-knowledge',
      label: 'rotate me',
      scopes: ['docs:read'],
      rotated_from: issued.id,
    });
    expect(rotated.token).not.toBe(issued.token);
    const lifetime = new Date(rotated.expires_at).getTime() - Date.now();
    expect(Math.round(lifetime / 86_400_000)).toBe(30);

    const all = JSON.parse((await runCli(['tokens', 'list', '--all', '--json'], env)).stdout);
    expect(all.find((t: { id: string }) => t.id === issued.id).state).toBe('revoked');
    const active = JSON.parse((await runCli(['tokens', 'list', '--json'], env)).stdout);
    expect(active.some((t: { id: string }) => t.id === issued.id)).toBe(false);

    const revoked = await runCli(['tokens', 'revoke', rotated.id], env);
    expect(revoked).toMatchObject({ code: 0 });
    expect(revoked.stdout).toBe(`Revoked token ${rotated.id} (dev-knowledge, "rotate me").\n`);
    const again = await runCli(['tokens', 'revoke', rotated.id], env);
    expect(again.stdout).toMatch(/^Token \w+ was already revoked on /);
  });

  it('explains each mistake and exits non-zero', async () => {
    const cases: [string[], number, string][] = [
      [
        ['tokens', 'issue', '--server', 'billing', '--label', 'x'],
        2,
        '--server: unknown server "billing"; one of:',
      ],
      [['tokens', 'issue', '--label', 'x'], 2, '--server is required'],
      [['tokens', 'issue', '--server', 'dev-knowledge'], 2, '--label is required'],
      [
        ['tokens', 'issue', '--server', 'dev-knowledge', '--label', 'x', '--expires', 'soon'],
        2,
        '--expires: "soon" is not a duration (30d, 12h, 2w), a date (2027-01-31) or "never"',
      ],
      [
        ['tokens', 'issue', '--server', 'dev-knowledge', '--label', 'x', '--expires', '2020-01-01'],
        2,
        '--expires: 2020-01-01 is in the past',
      ],
      [
        ['tokens', 'issue', '--server', 'dev-knowledge', '--label', 'x', '--scopes', 'docs:write'],
        2,
        '--scopes: docs:write not a scope of dev-knowledge; its scopes: docs:read',
      ],
      [
        ['tokens', 'issue', '--server', 'dev-knowledge', '--label', 'x', '--customer', 'C-1001'],
        2,
        '--customer is only for customer-bound servers',
      ],
      [
        ['tokens', 'issue', '--server', 'customer', '--label', 'x'],
        2,
        '--customer is required for the customer server',
      ],
      [
        ['tokens', 'issue', '--server', 'customer', '--label', 'x', '--customer', 'C-9999'],
        1,
        'customer C-9999 does not exist — check the customer number',
      ],
      [['tokens', 'revoke', 'nosuchtoken1'], 1, 'token nosuchtoken1 does not exist'],
      [['tokens', 'frobnicate'], 2, 'unknown command "tokens frobnicate"'],
    ];
    for (const [args, code, message] of cases) {
      const run = await runCli(args, env);
      expect({ args, code: run.code }).toEqual({ args, code });
      expect(run.stderr).toContain(message);
    }
  });

  it('stops quietly when its reader goes away (tokens issue | head): exit 0, no stack trace', async () => {
    const child = spawn(
      process.execPath,
      [cliBin, 'tokens', 'issue', '--server', 'dev-knowledge', '--label', 'piped into head'],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    // The reader is gone before anything is written: every write fails with EPIPE while the
    // command still has its database connection to close.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('has --help on every command', async () => {
    for (const sub of ['issue', 'list', 'revoke', 'rotate']) {
      const run = await runCli(['tokens', sub, '--help'], env);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^Usage: bulkhead tokens ${sub}`));
    }
  });
});
