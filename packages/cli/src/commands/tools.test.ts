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
const ADMIN_TOOLS =
  'find_customers, get_customer, update_customer_contact, list_invoices, send_invoice, issue_credit_note, list_tickets, get_ticket, categorize_ticket, escalate_ticket, answer_ticket';

describe('bulkhead tools', () => {
  it('switches a tool off with a reason, lists it, and switches it on again; each switch audited', async () => {
    const offRun = await runCli(
      ['tools', 'off', '--server', 'admin', '--tool', 'send_invoice', '--reason', 'mails to stale addresses'],
      env,
    );
    expect(offRun.stderr).toBe('');
    expect(offRun.code).toBe(0);
    expect(offRun.stdout).toBe(
      'Switched send_invoice of admin off: every replica leaves it out of tools/list and refuses calls to it within a second.\n' +
        'Switch it on again with: bulkhead tools on --server admin --tool send_invoice\n',
    );

    const listed = await runCli(['tools', 'list', '--json'], env);
    expect(listed.code).toBe(0);
    const [row, ...rest] = JSON.parse(listed.stdout) as Record<string, string>[];
    expect(rest).toEqual([]);
    expect(row).toEqual({
      server: 'admin',
      tool: 'send_invoice',
      reason: 'mails to stale addresses',
      switched_by: 'ops:ana',
      switched_at: row!.switched_at,
    });
    expect(new Date(row!.switched_at!).toISOString()).toBe(row!.switched_at);
    const text = await runCli(['tools', 'list', '--server', 'admin'], env);
    expect(text.stdout.split('\n')[0]).toBe('SERVER  TOOL          OFF SINCE         BY       REASON');
    expect(text.stdout.split('\n')[2]).toBe(
      `admin   send_invoice  ${row!.switched_at!.slice(0, 16).replace('T', ' ')}  ops:ana  mails to stale addresses`,
    );
    expect((await runCli(['tools', 'list', '--server', 'customer'], env)).stdout).toBe(
      'No tool is switched off.\n',
    );

    const again = await runCli(
      ['tools', 'off', '--server', 'admin', '--tool', 'send_invoice', '--reason', 'twice'],
      env,
    );
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /^bulkhead tools: send_invoice of admin is already off \(since .+ UTC, by ops:ana: mails to stale addresses\)\n$/,
    );

    const onRun = await runCli(['tools', 'on', '--server', 'admin', '--tool', 'send_invoice'], env);
    expect(onRun.code).toBe(0);
    expect(onRun.stdout).toMatch(
      /^Switched send_invoice of admin on again \(it was off since .+ UTC, by ops:ana: mails to stale addresses\)\.\n$/,
    );
    expect(JSON.parse((await runCli(['tools', 'list', '--json'], env)).stdout)).toEqual([]);
    const notOff = await runCli(['tools', 'on', '--server', 'admin', '--tool', 'send_invoice'], env);
    expect(notOff.code).toBe(1);
    expect(notOff.stderr).toBe(
      'bulkhead tools: send_invoice of admin is not switched off (switched off on admin: none)\n',
    );

    const events = await db.sql`
      select server, method, tool, outcome, token_label, result_summary from audit_events order by seq`;
    expect(events).toEqual([
      {
        server: 'admin',
        method: 'tools/switch',
        tool: 'send_invoice',
        outcome: 'ok',
        token_label: 'ops:ana',
        result_summary: { state: 'off', reason: 'mails to stale addresses', switched_by: 'ops:ana' },
      },
      {
        server: 'admin',
        method: 'tools/switch',
        tool: 'send_invoice',
        outcome: 'ok',
        token_label: 'ops:ana',
        result_summary: { state: 'on', reason: null, switched_by: 'ops:ana' },
      },
    ]);
  }, 60_000);

  it('answers an unknown server or tool, or a missing reason, with what there is; nothing is switched', async () => {
    const cases: [string[], string][] = [
      [
        ['tools', 'off', '--server', 'billing', '--tool', 'send_invoice', '--reason', 'x'],
        `--server: unknown server "billing"; one of: ${SERVERS}`,
      ],
      [
        ['tools', 'off', '--server', 'admin', '--tool', 'send_invoices', '--reason', 'x'],
        `--tool: admin has no tool "send_invoices"; its tools: ${ADMIN_TOOLS}`,
      ],
      [
        ['tools', 'off', '--server', 'admin', '--reason', 'x'],
        `--tool is required; the tools of admin: ${ADMIN_TOOLS}`,
      ],
      [
        ['tools', 'off', '--server', 'admin', '--tool', 'send_invoice', '--reason', '  '],
        '--reason is required: say why the tool is switched off',
      ],
      [
        ['tools', 'on', '--server', 'admin', '--tool', 'nope'],
        `--tool: admin has no tool "nope"; its tools: ${ADMIN_TOOLS}`,
      ],
      [['tools', 'list', '--server', 'nope'], `--server: unknown server "nope"; one of: ${SERVERS}`],
    ];
    for (const [args, message] of cases) {
      const run = await runCli(args, env);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toBe(`bulkhead tools: ${message}\nRun \`bulkhead tools --help\` for usage.\n`);
    }
    expect(await db.sql`select * from bulkhead_tool_switches`).toEqual([]);
  }, 60_000);
});
