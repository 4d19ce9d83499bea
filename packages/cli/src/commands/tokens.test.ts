import { createTestDatabase, type TestDatabase } from '@bulkhead/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../run-cli.ts';

let db: TestDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  env = { DATABASE_URL: db.url, BULKHEAD_OPERATOR: 'ops:ana' };
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
    ]);
    expect(out).toMatchObject({
      server: 'dev-knowledge',
      label: 'Claude Code on Ana’s laptop',
      scopes: ['docs:read'],
      customer_id: null,
    });
    expect(out.token).toMatch(new RegExp(`^bh_dev-knowledge_${out.id}_[A-Za-z0-9_-]{43}$`));
    const days = (new Date(out.expires_at).getTime() - Date.now()) / 86_400_000;
    expect(Math.round(days)).toBe(90);
    const [row] = await db.sql`select secret_hash, created_by from bulkhead_tokens where id = ${out.id}`;
    expect(row!.created_by).toBe('ops:ana');
    expect(Buffer.from(row!.secret_hash).length).toBe(32);
    expect(JSON.stringify(await db.sql`select * from bulkhead_tokens`)).not.toContain(
      out.token.split('_').at(-1),
    );
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
    expect(run.stdout).toContain('Claude Desktop — claude_desktop_config.json');
    expect(run.stdout).toContain('Cursor — ~/.cursor/mcp.json');
    expect(run.stdout).toContain('"type": "http"');
    expect(run.stdout).toContain('Expires: never.');
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

  it('has --help on every command', async () => {
    for (const sub of ['issue', 'list', 'revoke', 'rotate']) {
      const run = await runCli(['tokens', sub, '--help'], env);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^Usage: bulkhead tokens ${sub}`));
    }
  });
});
