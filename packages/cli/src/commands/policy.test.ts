import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueToken } from '@bulkhead/core/operator';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../run-cli.ts';

// `bulkhead policy` (issue 47): a set is checked against the servers' tools, proposed by one operator
// and made active only by another; `policy test` asks a set about example requests. Each run loads
// every server's tools (the schema a set is checked against): seconds, not milliseconds.
vi.setConfig({ testTimeout: 120_000 });

const EXAMPLES = join(import.meta.dirname, '../../../core/src/pipeline/policy/examples.cedar');
const dir = mkdtempSync(join(tmpdir(), 'bulkhead-policy-'));
let db: TestDatabase;
let env: Record<string, string | undefined>;
const operators: Record<string, string> = {};

async function operatorToken(person: string, manage = true): Promise<string> {
  const { token } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: `${person}'s laptop`,
    scopes: ['approvals:decide', ...(manage ? ['tokens:manage'] : [])],
    expiresAt: null,
    createdBy: 'test',
    owner: person,
  });
  return token;
}

beforeAll(async () => {
  db = await createTestDatabase();
  env = { DATABASE_URL: db.url };
  for (const person of ['Ana', 'Bob']) operators[person] = await operatorToken(person);
  operators.other = await operatorToken('Ana', true);
  operators.approverOnly = await operatorToken('Cem', false);
});
afterAll(async () => {
  await db.drop();
});

const as = (who: string) => ({ ...env, BULKHEAD_APPROVER_TOKEN: operators[who] });

describe('bulkhead policy propose, approve, show', () => {
  it('takes effect only when an operator other than its proposer approves it; each step audited', async () => {
    expect((await runCli(['policy', 'show', '--json'], env)).stdout).toContain('"default":true');
    const proposed = await runCli(['policy', 'propose', EXAMPLES, '--json'], as('Ana'));
    expect(proposed.stderr).toBe('');
    expect(proposed.code).toBe(0);
    const { version } = JSON.parse(proposed.stdout) as { version: string };
    expect(version).toMatch(/^[0-9a-f]{64}$/);

    // Not by Ana, under another token of hers; not by an approver who may not operate.
    const self = await runCli(['policy', 'approve', version], as('other'));
    expect(self.code).toBe(1);
    expect(self.stderr).toMatch(/approved by an operator other than its proposer \(Ana\)/);
    const notOperator = await runCli(['policy', 'approve', version], as('approverOnly'));
    expect(notOperator.code).toBe(1);
    expect(notOperator.stderr).toMatch(/may not operate: it lacks tokens:manage/);
    expect((await runCli(['policy', 'show', '--json'], env)).stdout).toContain('"default":true');

    const approved = await runCli(['policy', 'approve', version, '--reason', 'finance asked'], as('Bob'));
    expect(approved.stderr).toBe('');
    expect(approved.stdout).toBe(`Policy set ${version} is active (proposed by Ana, approved by Bob).\n`);
    const shown = JSON.parse((await runCli(['policy', 'show', '--json'], env)).stdout) as Record<
      string,
      unknown
    >;
    expect(shown).toEqual({ version, default: false, text: readFileSync(EXAMPLES, 'utf8') });

    const events = await db.sql<
      { method: string; outcome: string; label: string; summary: Record<string, unknown>; args: unknown }[]
    >`
      select method, outcome, token_label as label, result_summary as summary, arguments as args
      from audit_events where method like 'policy/%' order by seq`;
    expect(events.map((e) => [e.method, e.outcome, e.label])).toEqual([
      ['policy/propose', 'pending_approval', 'Ana'],
      ['policy/decide', 'approved', 'Bob'],
    ]);
    expect(events[0]!.args).toEqual({ text: readFileSync(EXAMPLES, 'utf8') });
    expect(events[1]!.summary).toMatchObject({
      version,
      proposed_by: 'Ana',
      decided_by: 'Bob',
      reason: 'finance asked',
    });

    // A new proposal retires the active one once approved; a rejected one never takes effect.
    const next = `@id("everything waits") @approvals("1") permit(principal, action, resource) when { context.gated };\n@id("reads run") permit(principal, action, resource) when { !context.gated };\n`;
    writeFileSync(join(dir, 'next.cedar'), next);
    const second = JSON.parse(
      (await runCli(['policy', 'propose', join(dir, 'next.cedar'), '--json'], as('Bob'))).stdout,
    ) as { version: string };
    expect((await runCli(['policy', 'reject', second.version], as('Ana'))).stderr).toMatch(
      /--reason is required/,
    );
    expect((await runCli(['policy', 'reject', second.version, '--reason', 'not now'], as('Ana'))).code).toBe(
      0,
    );
    const all = JSON.parse((await runCli(['policy', 'show', '--all', '--json'], env)).stdout) as {
      version: string;
      status: string;
    }[];
    expect(all.map((s) => [s.version, s.status])).toEqual([
      [second.version, 'rejected'],
      [version, 'active'],
    ]);
  });

  it('refuses a set that names an argument a tool does not have, before filing it', async () => {
    writeFileSync(
      join(dir, 'wrong.cedar'),
      `@id("typo") permit(principal, action == Admin::Action::"issue_credit_note", resource) when { context.args.amount < 5000 };\n`,
    );
    const r = await runCli(['policy', 'propose', join(dir, 'wrong.cedar')], as('Ana'));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/is not a valid policy set:\n {2}- policy "typo": .*args\.amount/);
    const [filed] = await db.sql<
      { n: number }[]
    >`select count(*)::int as n from bulkhead_policy_sets where text like '%typo%'`;
    expect(filed!.n).toBe(0);
  });
});

describe('bulkhead policy test', () => {
  const fixtures = (list: unknown[]) => {
    const file = join(dir, `fixtures-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(list));
    return file;
  };
  const credit = (cents: number) => ({
    invoice_number: 'R-2026-0001',
    amount_cents: cents,
    reason: 'goodwill gesture',
  });

  it('prints each request’s outcome and deciding policies; a request not as expected fails', async () => {
    const file = fixtures([
      { name: '20 runs', server: 'admin', tool: 'issue_credit_note', args: credit(2_000), expect: 'run' },
      {
        name: '500 needs finance',
        server: 'admin',
        tool: 'issue_credit_note',
        args: credit(50_000),
        expect: 'approve',
        approvals: 1,
      },
      {
        name: '5000 needs two',
        server: 'admin',
        tool: 'issue_credit_note',
        args: credit(500_000),
        expect: 'approve',
        approvals: 2,
      },
      {
        name: 'the 11th',
        server: 'admin',
        tool: 'issue_credit_note',
        args: credit(2_000),
        usage_today: 10,
        expect: 'refuse',
      },
    ]);
    const r = await runCli(['policy', 'test', file, '--file', EXAMPLES], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[2]).toMatch(/^ok +20 runs +run +credit notes up to 50 run$/);
    expect(lines[4]).toMatch(
      /^ok +5000 needs two +approve: 2 persons from finance +larger credit notes need two people from finance$/,
    );
    expect(lines[5]).toMatch(/^ok +the 11th +refuse: This client has already issued ten credit notes today/);
    expect(lines.at(-2)).toMatch(/^4 requests, 0 not as expected \(policy set [0-9a-f]{12}\)\.$/);

    const wrong = await runCli(
      [
        'policy',
        'test',
        fixtures([
          { name: 'x', server: 'admin', tool: 'issue_credit_note', args: credit(2_000), expect: 'approve' },
        ]),
        '--file',
        EXAMPLES,
        '--json',
      ],
      env,
    );
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stdout)).toEqual([
      { name: 'x', outcome: { kind: 'run', policies: ['credit notes up to 50 run'], errors: [] }, ok: false },
    ]);
  });

  it('says what is wrong with a fixture: an unknown tool, arguments the tool refuses, an unknown field', async () => {
    const unknown = await runCli(
      ['policy', 'test', fixtures([{ name: 'a', server: 'admin', tool: 'nope' }]), '--file', EXAMPLES],
      env,
    );
    expect(unknown.stderr).toMatch(/fixture "a": admin has no tool nope/);
    const bad = await runCli(
      [
        'policy',
        'test',
        fixtures([{ name: 'b', server: 'admin', tool: 'issue_credit_note', args: { amount_cents: 'x' } }]),
        '--file',
        EXAMPLES,
      ],
      env,
    );
    expect(bad.stderr).toMatch(/fixture "b": the arguments are not valid for issue_credit_note/);
    const field = await runCli(
      [
        'policy',
        'test',
        fixtures([{ name: 'c', server: 'admin', tool: 'x', expected: 'run' }]),
        '--file',
        EXAMPLES,
      ],
      env,
    );
    expect(field.code).toBe(2);
    expect(field.stderr).toMatch(/expected/);
  });
});
