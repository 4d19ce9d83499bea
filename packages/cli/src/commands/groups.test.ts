import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../run-cli.ts';
import { discoverServers } from '../servers.ts';

let db: TestDatabase;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  db = await createTestDatabase();
  env = { DATABASE_URL: db.url, BULKHEAD_OPERATOR: 'ops:ana' };
});
afterAll(async () => {
  await db.drop();
});

const SERVERS = discoverServers()
  .filter((s) => s.kind === 'mcp')
  .map((s) => s.name)
  .join(', ');

describe('bulkhead groups', () => {
  it('maps a group to rights, replaces them, lists and removes them; every change audited', async () => {
    const added = await runCli(['groups', 'add', 'finance', '--approve', 'admin'], env);
    expect(added).toEqual({
      code: 0,
      stdout:
        'Group "finance" gives: approve admin. Its members have these rights from their next sign-in on.\n',
      stderr: '',
    });
    const updated = await runCli(
      ['groups', 'add', 'finance', '--approve', 'admin', '--operate', '--tokens', 'customer:account:read'],
      env,
    );
    expect(updated.stdout).toBe(
      'Group "finance" now gives: approve admin, operate, tokens customer:account:read (it gave: approve admin).\n',
    );
    const listed = await runCli(['groups', 'list', '--json'], env);
    const [row, ...rest] = JSON.parse(listed.stdout) as Record<string, unknown>[];
    expect(rest).toEqual([]);
    expect(row).toEqual({
      group: 'finance',
      approve: ['admin'],
      operate: true,
      tokens: ['customer:account:read'],
      updated_at: row!.updated_at,
      updated_by: 'ops:ana',
    });
    const text = await runCli(['groups', 'list'], env);
    expect(text.stdout.split('\n')[0]).toMatch(/^GROUP +RIGHTS +UPDATED +BY$/);
    const removed = await runCli(['groups', 'remove', 'finance'], env);
    expect(removed.stdout).toBe(
      'Group "finance" gives no rights any more (it gave: approve admin, operate, tokens customer:account:read).\n',
    );
    expect((await runCli(['groups', 'list', '--json'], env)).stdout).toBe('[]\n');
    const events = await db.sql`
      select method, token_label, result_summary->>'action' as action, result_summary->>'group' as "group"
      from audit_events where method = 'groups/change' order by seq`;
    expect(events).toEqual(
      ['add', 'update', 'remove'].map((action) => ({
        method: 'groups/change',
        token_label: 'ops:ana',
        action,
        group: 'finance',
      })),
    );
  }, 90_000);

  it('refuses a group without rights, an unknown server or scope, and removing a group that has none', async () => {
    expect((await runCli(['groups', 'add', 'sales'], env)).stderr).toContain(
      'give the group at least one right: --approve <server>, --operate or --tokens <server>',
    );
    expect((await runCli(['groups', 'add', 'sales', '--approve', 'billing'], env)).stderr).toContain(
      `--approve: "billing" is not an MCP server; the servers: ${SERVERS}`,
    );
    expect((await runCli(['groups', 'add', 'sales', '--tokens', 'customer:nope'], env)).stderr).toContain(
      '--tokens: customer has no scope "nope"',
    );
    const gone = await runCli(['groups', 'remove', 'sales'], env);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('group "sales" has no rights');
  }, 90_000);
});
