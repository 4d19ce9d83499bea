import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createLogger, createServer, defineTool } from '@bulkhead/core';
import { startApprovalExecutor, type ApprovalExecutor } from '@bulkhead/core/operator';
import {
  connectTaskClient,
  issueTestToken,
  startTestServer,
  testApprover,
  type TestServer,
} from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadEnv } from '../env.ts';
import { CliError, UsageError, type Io } from '../io.ts';
import { runCli } from '../run-cli.ts';
import { commands } from './index.ts';

/**
 * Runs a command in this process (fast) with main.ts's exit codes; the real
 * binary is spawned (runCli) for the paths that matter most.
 */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: Io = { out: (l) => (stdout += `${l}\n`), err: (l) => (stderr += `${l}\n`), progress: () => {} };
  const command = await commands.find((c) => c.name === args[0])!.load();
  try {
    const code = await command.run(args.slice(1), { env: loadEnv(env), io });
    return { code, stdout, stderr };
  } catch (err) {
    if (err instanceof UsageError)
      return { code: 2, stdout, stderr: `bulkhead ${args[0]}: ${err.message}\n` };
    if (err instanceof CliError) return { code: 1, stdout, stderr: `bulkhead ${args[0]}: ${err.message}\n` };
    throw err;
  }
}

const def = createServer({
  name: 'cli-gate',
  version: '1.0.0',
  description: 'A gated server built in the CLI test.',
  tools: [
    defineTool({
      name: 'issue_refund',
      title: 'Issue refund',
      description: 'Refunds an amount to a customer.',
      scope: 'refunds:write',
      input: z.object({ customer_id: z.string(), amount_cents: z.number().int().positive() }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
      approval: {
        // The customer's name comes from the database, as customer text does in the shipped servers.
        preview: async ({ customer_id, amount_cents }, ctx) => {
          const [customer] = await ctx.sql<{ name: string }[]>`
            select name from refund_customers where id = ${customer_id}`;
          return `Refund €${(amount_cents / 100).toFixed(2)} to ${customer?.name ?? customer_id}.`;
        },
      },
      handler: async ({ customer_id, amount_cents }, ctx) => {
        await ctx.sql`insert into refunds (approval_id, customer_id, amount_cents) values (${ctx.approval!.id}, ${customer_id}, ${amount_cents})`;
        return { refunded_cents: amount_cents };
      },
    }),
    defineTool({
      name: 'fleeting_refund',
      title: 'Fleeting refund',
      description: 'A refund whose request lapses at once.',
      scope: 'refunds:write',
      input: z.object({ customer_id: z.string() }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
      approval: { preview: ({ customer_id }) => `Refund ${customer_id}.`, expiresInHours: 0.1 / 3600 },
      handler: async () => ({}),
    }),
  ],
});

let db: TestDatabase;
let server: TestServer;
let executor: ApprovalExecutor;
let env: Record<string, string>;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`create table refunds (approval_id text not null, customer_id text not null, amount_cents int not null)`;
  await db.sql`create table refund_customers (id text primary key, name text not null)`;
  await db.sql`insert into refund_customers values ('C-1004\u202eok', ${'Acme\u001b[31m\u202eGmbH'})`;
  const logger = createLogger({ level: 'silent' });
  server = await startTestServer(def, { db, logger });
  await db.sql`grant insert on refunds to bulkhead_cli_gate`;
  await db.sql`grant select on refund_customers to bulkhead_cli_gate`;
  executor = startApprovalExecutor(def, { sql: server.sql, logger });
  await executor.ready;
  token = await issueTestToken(db.sql, def, { label: 'Claude Desktop (billing)', owner: 'claude-ops' });
  await db.as('console');
  const ana = await testApprover(db, 'ana@example.test');
  env = { DATABASE_URL: db.url, BULKHEAD_OPERATOR: 'ops:ana', BULKHEAD_APPROVER_TOKEN: ana.token };
});
afterAll(async () => {
  await executor.stop();
  await server.close();
  await db.drop();
});

async function gate(name: string, args: Record<string, unknown>): Promise<string> {
  const client = new Client(
    { name: 'cli-test', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(server.url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  const result = await client.callTool({ name, arguments: args });
  await client.close();
  // A gated tool's pending_approval answer, as the model reads it.
  const text = (result.content as { text: string }[]).map((c) => c.text).join('\n');
  const found = /ap_[a-z2-9]{12}/.exec(text);
  if (!found) throw new Error(`no approval id in: ${text}`);
  return found[0];
}

const refunds = async (id: string) =>
  (await db.sql<{ n: number }[]>`select count(*)::int as n from refunds where approval_id = ${id}`)[0]!.n;

describe('bulkhead approvals', () => {
  it('lists, shows, approves once and runs exactly once', async () => {
    expect((await cli(['approvals', 'list'])).stdout).toBe(
      'Nothing waits for approval (--status all shows every request).\n',
    );
    const id = await gate('issue_refund', { customer_id: 'C-1001', amount_cents: 12_000 });

    const listed = JSON.parse((await cli(['approvals', 'list', '--json'])).stdout);
    expect(listed).toEqual([
      expect.objectContaining({
        id,
        server: 'cli-gate',
        tool: 'issue_refund',
        status: 'pending',
        preview: 'Refund €120.00 to C-1001.',
        arguments: { customer_id: 'C-1001', amount_cents: 12_000 },
        requested_by: 'Claude Desktop (billing)',
        decided_by: null,
      }),
    ]);
    const table = (await cli(['approvals', 'list', '--server', 'cli-gate'])).stdout.split('\n');
    expect(table[0]).toMatch(/^ID +SERVER +TOOL +STATUS +REQUESTED BY +AGE +PREVIEW$/);
    expect(table[2]).toMatch(
      new RegExp(
        `^${id} +cli-gate +issue_refund +pending +Claude Desktop \\(billing\\) +\\d+s +Refund €120.00 to C-1001.$`,
      ),
    );

    const shown = await cli(['approvals', 'show', id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(
      `Approval ${id} — pending\n  server      cli-gate\n  tool        issue_refund\n  preview     Refund €120.00 to C-1001.\n`,
    );
    expect(shown.stdout).toMatch(
      /Audit trail:\n {2}\d{4}-\d\d-\d\d \d\d:\d\d UTC {2}tools\/call +pending_approval +Claude Desktop \(billing\)\n/,
    );

    const approved = await runCli(
      ['approvals', 'approve', id, '--reason', 'agreed on the phone', '--wait', '--json'],
      env,
    );
    expect(approved.code).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({
      id,
      status: 'executed',
      decided_by: 'cli:ana@example.test',
      reason: 'agreed on the phone',
      result: { refunded_cents: 12_000 },
      error: null,
    });
    expect(await refunds(id)).toBe(1);

    const again = await runCli(['approvals', 'approve', id], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      new RegExp(
        `^bulkhead approvals: approval ${id} was already decided \\(executed by cli:ana@example.test on .* UTC\\)\n$`,
      ),
    );
    expect(await refunds(id)).toBe(1);

    const story = JSON.parse((await cli(['approvals', 'show', id, '--json'])).stdout);
    expect(
      story.events.map((e: { method: string; outcome: string; by: string }) => [e.method, e.outcome, e.by]),
    ).toEqual([
      ['tools/call', 'pending_approval', 'Claude Desktop (billing)'],
      ['approvals/decide', 'approved', 'cli:ana@example.test'],
      ['approvals/execute', 'executed', 'Claude Desktop (billing)'],
    ]);
  });

  it('rejects only with a reason, and a rejected request never runs', async () => {
    const id = await gate('issue_refund', { customer_id: 'C-1002', amount_cents: 500 });
    const bare = await runCli(['approvals', 'reject', id], env);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('--reason is required to reject: say why, the requester will see it');
    const rejected = await cli(['approvals', 'reject', id, '--reason', 'duplicate of last week’s refund']);
    expect(rejected).toMatchObject({
      code: 0,
      stdout: `Rejected ${id} (issue_refund on cli-gate): it will never run.\n`,
    });
    await executor.drain();
    expect(await refunds(id)).toBe(0);
    const shown = JSON.parse((await cli(['approvals', 'show', id, '--json'])).stdout);
    expect(shown).toMatchObject({
      status: 'rejected',
      reason: 'duplicate of last week’s refund',
      executed_at: null,
    });
  });

  it('explains unknown, expired and malformed requests', async () => {
    const id = await gate('fleeting_refund', { customer_id: 'C-1003' });
    await new Promise((r) => setTimeout(r, 200));
    const cases: [string[], number, string][] = [
      [
        ['approvals', 'approve', 'ap_aaaaaaaaaaaa'],
        1,
        'approval ap_aaaaaaaaaaaa does not exist — see `bulkhead approvals list --status all`',
      ],
      [
        ['approvals', 'show', 'ap_aaaaaaaaaaaa'],
        1,
        'approval ap_aaaaaaaaaaaa does not exist — see `bulkhead approvals list --status all`',
      ],
      [['approvals', 'approve', id], 1, `approval ${id} expired undecided on`],
      [['approvals', 'approve'], 2, 'give exactly one approval id'],
      [
        ['approvals', 'list', '--status', 'done'],
        2,
        '--status: "done" is not a status; one of: pending (default), approved, rejected, executed, expired, failed, withdrawn or all',
      ],
    ];
    for (const [args, code, message] of cases) {
      const run = await cli(args);
      expect({ args, code: run.code }).toEqual({ args, code });
      expect(run.stderr).toContain(message);
    }
    const expired = JSON.parse((await cli(['approvals', 'list', '--status', 'expired', '--json'])).stdout);
    expect(expired.map((a: { id: string }) => a.id)).toEqual([id]);
  });

  it('prints customer text with its control characters visible, never as terminal escapes', async () => {
    // Control characters cannot come in as arguments (the kit refuses them); they come from the database.
    const id = await gate('issue_refund', { customer_id: 'C-1004\u202eok', amount_cents: 700 });
    const visible = 'Refund €7.00 to Acme[U+001B][31m[U+202E]GmbH.';
    const table = (await cli(['approvals', 'list'])).stdout;
    expect(table).toContain(` ${visible}\n`);
    const shown = (await cli(['approvals', 'show', id])).stdout;
    expect(shown).toContain(`  preview     ${visible}\n`);
    expect(shown).toContain(`  arguments   {\n                "customer_id": "C-1004[U+202E]ok",\n`);
    const json = (await cli(['approvals', 'show', id, '--json'])).stdout;
    expect(json).toContain('"preview":"Refund €7.00 to Acme\\u001b[31m\\u202eGmbH."');
    for (const out of [table, shown, json])
      for (const c of ['\u001b', '\u202e']) expect(out).not.toContain(c);
    expect(JSON.parse(json).preview).toBe('Refund €7.00 to Acme\u001b[31m\u202eGmbH.');
    await cli(['approvals', 'reject', id, '--reason', 'test text']);
  });

  it('refuses to approve a request whose stored arguments changed since it was made', async () => {
    const id = await gate('issue_refund', { customer_id: 'C-1005', amount_cents: 100 });
    await db.sql`update bulkhead_approvals set arguments = jsonb_set(arguments, '{amount_cents}', '100000') where id = ${id}`;
    const run = await runCli(['approvals', 'approve', id], env);
    expect(run).toMatchObject({
      code: 1,
      stderr: `bulkhead approvals: approval ${id}: the stored arguments changed since the request — refused; reject it and ask for a new request\n`,
    });
    await executor.drain();
    expect(await refunds(id)).toBe(0);
    expect((await cli(['approvals', 'reject', id, '--reason', 'tampered'])).code).toBe(0);
  });

  it('decides only with an approver token, and not what a token of the same person asked for', async () => {
    const id = await gate('issue_refund', { customer_id: 'C-1006', amount_cents: 900 });
    const bare = await runCli(['approvals', 'approve', id], { ...env, BULKHEAD_APPROVER_TOKEN: '' });
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain(
      'an approver token is required: --approver-token <token> or BULKHEAD_APPROVER_TOKEN',
    );
    const mcp = await runCli(['approvals', 'approve', id, '--approver-token', token], env);
    expect(mcp).toMatchObject({
      code: 1,
      stderr:
        'bulkhead approvals: the approver token is not valid: it is unknown, expired, revoked, or not an approver token (MCP tokens never decide)\n',
    });
    // The person whose token filed the request holds an approver token too.
    const self = await testApprover(db, 'claude-ops');
    const refused = await runCli(['approvals', 'approve', id, '--approver-token', self.token], env);
    expect(refused).toMatchObject({
      code: 1,
      stderr: `bulkhead approvals: approval ${id} was requested with a token issued to claude-ops, who may not approve it too: another approver must decide (separation of duties)\n`,
    });
    const allowed = await runCli(['approvals', 'approve', id, '--approver-token', self.token, '--json'], {
      ...env,
      BULKHEAD_ALLOW_SELF_APPROVAL: 'true',
    });
    expect(allowed.code).toBe(0);
    expect(JSON.parse(allowed.stdout)).toMatchObject({ id, decided_by: 'cli:claude-ops' });
    const [decision] = await db.sql`
      select server, db_role, token_id from audit_events where approval_id = ${id} and outcome = 'approved'`;
    expect(decision).toEqual({
      server: 'console',
      db_role: 'bulkhead_console',
      token_id: self.approver.tokenId,
    });
  });

  it('shows a request its client withdrew (an MCP task cancelled), and refuses to decide it', async () => {
    const client = await connectTaskClient(server.url, token, 'cli-task-test');
    const created = await client.callToolAsTask('issue_refund', { customer_id: 'C-1001', amount_cents: 700 });
    const id = created.taskId as string;
    await client.task('tasks/cancel', { taskId: id });
    await client.close();

    const listed = JSON.parse((await cli(['approvals', 'list', '--status', 'withdrawn', '--json'])).stdout);
    expect(listed).toEqual([
      expect.objectContaining({
        id,
        status: 'withdrawn',
        as_task: true,
        decided_by: null,
        withdrawn_at: expect.any(String),
      }),
    ]);
    const shown = await cli(['approvals', 'show', id]);
    expect(shown.stdout).toContain(`Approval ${id} — withdrawn\n`);
    expect(shown.stdout).toContain(
      '  as task     requested as an MCP task: the approval id is its task id\n',
    );
    expect(shown.stdout).toMatch(
      /\n {2}withdrawn {3}\d{4}-\d\d-\d\d \d\d:\d\d UTC by the requester, before anyone decided; it will never run\n/,
    );
    expect(shown.stdout).toMatch(/ {2}tasks\/cancel +withdrawn +Claude Desktop \(billing\)\n/);

    const refused = await runCli(['approvals', 'approve', id], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^bulkhead approvals: approval ${id} was withdrawn by its requester \\(Claude Desktop \\(billing\\)\\) on \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC before anyone decided; it will never run\n$`,
      ),
    );
    expect(await refunds(id)).toBe(0);
  });

  it('has --help on every subcommand', async () => {
    for (const sub of ['list', 'show', 'approve', 'reject']) {
      const run = await cli(['approvals', sub, '--help']);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^Usage: bulkhead approvals ${sub}`));
    }
  });
});

describe('bulkhead approvers', () => {
  it('adds a console token shown once, lists and revokes it', async () => {
    const added = await cli([
      'approvers',
      'add',
      '--person',
      'ana@example.test',
      '--label',
      'Ana Berg (finance)',
      '--expires',
      '30d',
      '--json',
    ]);
    expect(added.code).toBe(0);
    const out = JSON.parse(added.stdout);
    expect(out.token).toMatch(new RegExp(`^bh_console_${out.id}_[A-Za-z0-9_-]{43}$`));
    const [row] =
      await db.sql`select kind, server, scopes, created_by from bulkhead_tokens where id = ${out.id}`;
    expect(row).toEqual({
      kind: 'approver',
      server: 'console',
      scopes: ['approvals:decide'],
      created_by: 'ops:ana',
    });

    const text = await runCli(['approvers', 'add', '--person', 'bo@example.test', '--label', 'Bo'], env);
    expect(text.stdout).toMatch(
      /^Issued approver token \w{12} for bo@example.test — "Bo"\n\n {2}bh_console_\S+\n\nThis is the only time/,
    );
    expect(text.stdout).toContain('Sign in at http://127.0.0.1:3100/login.');

    const listed = JSON.parse((await cli(['approvers', 'list', '--json'])).stdout);
    expect(listed.map((t: { label: string; person: string }) => [t.label, t.person]).slice(0, 2)).toEqual([
      ['Bo', 'bo@example.test'],
      ['Ana Berg (finance)', 'ana@example.test'],
    ]);
    expect(listed[0].token).toBeUndefined();
    const mcpList = JSON.parse((await cli(['tokens', 'list', '--json'])).stdout);
    expect(mcpList.some((t: { id: string }) => t.id === out.id)).toBe(false);

    const revoked = await cli(['approvers', 'revoke', out.id]);
    expect(revoked.stdout).toBe(
      `Revoked approver token ${out.id} ("Ana Berg (finance)"); its console sessions are closed.\n`,
    );
    const unknown = await cli(['approvers', 'revoke', 'nosuchtoken1']);
    expect(unknown).toMatchObject({ code: 1 });
    expect(unknown.stderr).toContain('approver token nosuchtoken1 does not exist');
    const missing = await cli(['approvers', 'add', '--label', 'Nobody']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--person is required: an approver is a person');
  });

  it('gives the operator right only with --can-manage-tokens, and says which rights a token has', async () => {
    const operator = JSON.parse(
      (await cli(['approvers', 'add', '--person', 'olga@example.test', '--can-manage-tokens', '--json']))
        .stdout,
    );
    expect(operator).toMatchObject({ can_grant: false, can_manage_tokens: true });
    const plain = JSON.parse(
      (await cli(['approvers', 'add', '--person', 'piet@example.test', '--json'])).stdout,
    );
    expect(plain).toMatchObject({ can_grant: false, can_manage_tokens: false });
    const rights = await db.sql<{ id: string; scopes: string[]; operator: boolean }[]>`
      select id, scopes, bulkhead_operator(id) as operator from bulkhead_tokens
      where id in (${operator.id}, ${plain.id}) order by id = ${operator.id} desc`;
    expect(rights).toEqual([
      { id: operator.id, scopes: ['approvals:decide', 'tokens:manage'], operator: true },
      { id: plain.id, scopes: ['approvals:decide'], operator: false },
    ]);
    const table = (await cli(['approvers', 'list'])).stdout;
    expect(table).toMatch(new RegExp(`${operator.id}\\s+olga@example.test\\s+approve\\+operate\\s`));
    expect(table).toMatch(new RegExp(`${plain.id}\\s+piet@example.test\\s+approve\\s`));
    await cli(['approvers', 'revoke', operator.id]);
    const [after] = await db.sql`select bulkhead_operator(${operator.id}) as operator`;
    expect(after!.operator).toBe(false);
  });

  it('says when a person is another spelling of one already named on a token', async () => {
    const first = await cli(['approvers', 'add', '--person', 'Carla@Example.test']);
    expect([first.code, first.stderr]).toEqual([0, '']);
    const near = await cli(['approvers', 'add', '--person', 'carla@example.test ']);
    expect(near.code).toBe(0);
    expect(near.stderr).toBe(
      'Note: "carla@example.test" is the same person as "Carla@Example.test" already named on a token: decisions treat them as one person (use that spelling to avoid confusion).\n',
    );
    const other = await cli(['approvers', 'add', '--person', 'carl@example.test']);
    expect([other.code, other.stderr]).toEqual([0, '']);
  });

  it('links the console of a second stack (BULKHEAD_PORT_OFFSET), or the one BULKHEAD_CONSOLE_URL names', async () => {
    for (const [more, link] of [
      [{ BULKHEAD_PORT_OFFSET: '1000' }, 'http://127.0.0.1:4100/login'],
      [
        { BULKHEAD_CONSOLE_URL: 'https://approve.example.com/', BULKHEAD_PORT_OFFSET: '1000' },
        'https://approve.example.com/login',
      ],
    ] as const) {
      const run = await runCli(['approvers', 'add', '--person', 'dora@example.test'], { ...env, ...more });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(`Sign in at ${link}.`);
    }
  });
});
