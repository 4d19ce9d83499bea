import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/client';
import { createAuditWriter } from '@bulkhead/audit';
import { runCli } from '@bulkhead/cli/run-cli';
import { createLogger } from '@bulkhead/core';
import {
  getApproval,
  startApprovalExecutor,
  type ApprovalExecutor,
  type ApprovalRecord,
} from '@bulkhead/core/operator';
import {
  callFlat,
  connectTestClient,
  issueTestToken,
  startTestServer,
  testApprover,
  type FlatResult,
  type TestApprover,
  type TestServer,
} from '@bulkhead/core/testing';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { seedDemo } from '@bulkhead/demo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { startAlertmanager } from '../servers/ops/src/fixtures/alertmanager.ts';
import { opsServer } from '../servers/ops/src/server.ts';
import { upstreamsAt } from '../servers/ops/src/test-client.ts';
import { serveConsole } from '../apps/console/src/fixtures/served-console.ts';
import { root } from './helpers.ts';

// Issue 47, enforced: the shipped example policies active, two replicas of the admin server asking them
// on every call, approvals stored with what the policy asked, and the database counting persons.

const EXAMPLES = readFileSync(`${root}packages/core/src/pipeline/policy/examples.cedar`, 'utf8');

let db: TestDatabase;
let replicas: TestServer[];
let clients: Client[];
let executor: ApprovalExecutor;
let invoice: string;
let finance: { bob: TestApprover; carol: TestApprover };
let dave: TestApprover;
/** Approvals the tests made, for `policy explain`. */
const made: Record<string, string> = {};

/** Activates `text` as an operator's approved set would be (the owner writes it; servers hear of it). */
async function activate(text: string): Promise<void> {
  const version = createHash('sha256').update(text).digest('hex');
  await db.sql`update bulkhead_policy_sets set status = 'retired' where status = 'active'`;
  await db.sql`
    insert into bulkhead_policy_sets (version, text, status, proposed_by, proposed_by_token, decided_by, decided_by_token, decided_at)
    values (${version}, ${text}, 'active', 'Olga', 't', 'Otto', 't', now())
    on conflict (version) do update set status = 'active'`;
  await db.sql`select pg_notify('bulkhead_policy', ${version})`;
}

/** An approver token for `person` in `groups`, as `bulkhead approvers add --group` issues it. */
async function approverIn(person: string, groups: string[]): Promise<TestApprover> {
  const approver = await testApprover(db, person);
  await db.sql`update bulkhead_tokens set groups = ${groups} where id = ${approver.approver.tokenId}`;
  return approver;
}

const credit = (client: Client, cents: number): Promise<FlatResult> =>
  callFlat(client, 'issue_credit_note', {
    invoice_number: invoice,
    amount_cents: cents,
    reason: 'Goodwill for the late delivery',
  });

async function until(id: string, status: string): Promise<ApprovalRecord> {
  for (let tries = 0; ; tries++) {
    await executor.drain();
    const a = (await getApproval(db.sql, id))!;
    if (a.status === status) return a;
    if (tries > 200) throw new Error(`approval ${id} is ${a.status}, not ${status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  const [open] = await db.sql<{ number: string }[]>`
    select number from invoices where status = 'open' order by total_cents desc limit 1`;
  invoice = open!.number;
  await activate(EXAMPLES);
  const logger = createLogger({ level: process.env.TEST_LOG ? 'error' : 'silent' });
  replicas = [
    await startTestServer(adminServer, { db, logger }),
    await startTestServer(adminServer, { db, logger }),
  ];
  const token = await issueTestToken(db.sql, adminServer, { owner: 'Ada', label: 'assistant' });
  clients = await Promise.all(replicas.map((r) => connectTestClient(r.url, token)));
  executor = startApprovalExecutor(adminServer, {
    sql: replicas[0]!.sql,
    logger: createLogger({ level: 'silent' }),
  });
  await executor.ready;
  finance = { bob: await approverIn('Bob', ['finance']), carol: await approverIn('Carol', ['finance']) };
  dave = await approverIn('Dave', ['support']);
}, 120_000);
afterAll(async () => {
  await executor?.stop();
  for (const c of clients ?? []) await c.close();
  for (const r of replicas ?? []) await r.close();
  await db?.drop();
});

/** The call's audit event: outcome and what it keeps of the policy. */
async function callEvent(approvalId: string) {
  const [e] = await db.sql<{ outcome: string; result_summary: Record<string, unknown> }[]>`
    select outcome, result_summary from audit_events where method = 'tools/call' and approval_id = ${approvalId}`;
  return e!;
}

describe('the shipped examples, enforced', () => {
  it('a €20 credit note runs with no person, exactly once, its event naming the policy that let it', async () => {
    const r = await credit(clients[0]!, 2000);
    expect(r.isError, r.text).toBe(false);
    const s = r.structured as { status: string; approval_id: string; note: string };
    expect(s.status).toBe('approved');
    expect(s.note).toContain('without a person');
    made.ran = s.approval_id;
    const done = await until(s.approval_id, 'executed');
    expect(done).toMatchObject({ approvedByPolicy: true, decidedBy: 'policy:credit notes up to 50 run' });
    expect(await callEvent(s.approval_id)).toMatchObject({
      outcome: 'approved',
      result_summary: { policy: ['credit notes up to 50 run'], policy_version: expect.any(String) },
    });
    const [notes] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from credit_notes where invoice_number = ${invoice} and amount_cents = 2000`;
    expect(notes!.n).toBe(1);
  });

  it('€500 waits for one person from finance: someone outside it is refused, by the console and by the database', async () => {
    const r = await credit(clients[1]!, 50_000);
    const s = r.structured as { status: string; approval_id: string };
    expect(s.status).toBe('pending_approval');
    made.five = s.approval_id;
    const filed = (await getApproval(db.sql, s.approval_id))!;
    expect(filed).toMatchObject({
      requiredApprovals: 1,
      approverGroups: ['finance'],
      policyIds: ['credit notes up to 1000 need one person from finance'],
    });
    await expect(dave.decide(s.approval_id, 'approve')).rejects.toThrow(
      /asks for approval of .* by someone from finance, and you are in none of those groups/,
    );
    // The console's login writing the decision itself, under Dave's proof: the database refuses.
    expect(await decideByHand(s.approval_id, dave)).toMatch(/Dave is in none of the groups the policy names/);
    expect((await getApproval(db.sql, s.approval_id))!.status).toBe('pending');
    await finance.bob.decide(s.approval_id, 'approve');
    await until(s.approval_id, 'executed');
  });

  it('€5,000 executes only after two distinct persons approve; the same person twice, or under another spelling, is one', async () => {
    const r = await credit(clients[0]!, 500_000);
    const s = r.structured as { status: string; approval_id: string; note: string };
    expect(s.status).toBe('pending_approval');
    expect(s.note).toContain('2 different people must approve');
    const id = s.approval_id;
    made.four = id;
    expect(await finance.bob.decide(id, 'approve')).toMatchObject({ status: 'pending', decidedBy: null });
    await expect(finance.bob.decide(id, 'approve')).rejects.toThrow(/you have already approved/);
    const [again] = await db.sql<{ result_summary: { reason: string } }[]>`
      select result_summary from audit_events
      where approval_id = ${id} and method = 'approvals/decide' and outcome = 'forbidden'`;
    expect(again!.result_summary.reason).toBe('approved_already');
    // Bob's second token, and Bob under a zero-width space: the same person to the database.
    const bobAgain = await approverIn('Bob', ['finance']);
    expect(await decideByHand(id, bobAgain)).toMatch(/Bob has already approved/);
    const spelled = await approverIn('B\u200bob', ['finance']);
    expect(await decideByHand(id, spelled)).toMatch(/has already approved/);
    expect((await getApproval(db.sql, id))!.status).toBe('pending');
    const votes = await db.sql`select decided_by from bulkhead_approval_votes where approval_id = ${id}`;
    expect(votes).toEqual([{ decided_by: 'console:Bob' }]);
    expect(await finance.carol.decide(id, 'approve')).toMatchObject({ status: 'approved' });
    await until(id, 'executed');
  });

  it('the console’s approval page shows the deciding policy and the quorum’s progress, in Chromium', async () => {
    // Another client of the assistant's (its own quota): €2,000 waits for two people from finance.
    const other = await connectTestClient(
      replicas[1]!.url,
      await issueTestToken(db.sql, adminServer, { owner: 'Ada', label: 'assistant, second client' }),
    );
    const r = await credit(other, 200_000);
    await other.close();
    const id = (r.structured as { approval_id: string }).approval_id;
    const served = await serveConsole(db, createLogger({ level: 'silent' }), []);
    try {
      const approve = async (who: TestApprover) => {
        const context = await served.browser.newContext();
        const page = await context.newPage();
        page.setDefaultTimeout(10_000);
        await page.goto(`${served.base}/login`);
        await page.getByLabel('Approver token').fill(who.token);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
        await page.goto(`${served.base}/approvals/${id}`);
        const before = await page.locator('#quorum').textContent();
        await page.getByRole('button', { name: 'Approve and run' }).click();
        await page.getByRole('status').waitFor();
        const after = {
          notice: await page.getByRole('status').textContent(),
          quorum: await page.locator('#quorum').textContent(),
        };
        const policy = await page.locator('dt:text-is("Policy") + dd').textContent();
        await context.close();
        return { before, after, policy };
      };
      const bob = await approve(finance.bob);
      expect(bob.policy).toContain('larger credit notes need two people from finance');
      expect(bob.before).toBe('0 of 2 approvals from finance');
      expect(bob.after.notice).toContain('Your approval is recorded: 1 of 2 approvals from finance');
      expect(bob.after.quorum).toBe('1 of 2 approvals from finance — by console:Bob');
      const carol = await approve(finance.carol);
      expect(carol.after.notice).toMatch(/Approved/);
      expect(carol.after.quorum).toBe('2 of 2 approvals from finance — by console:Bob, console:Carol');
      await until(id, 'executed');
    } finally {
      await served.close();
    }
  });

  it('a server login cannot file a request as run by policy unless the active set has such a permit', async () => {
    const admin = replicas[0]!.sql;
    const file = (policy: string[], version: string) =>
      admin`insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
          expires_at, request_id, approved_by_policy, status, decided_by, decided_arguments_hash, policy_ids, policy_version)
        values (${`ap_forged${randomUUID()
          .replace(/[^a-z2-9]/g, '')
          .slice(0, 3)
          .padEnd(3, 'a')}`}, 'admin',
          'issue_credit_note', '{}', '{}', ${createHash('sha256').update('{}').digest('hex')}, 'x',
          now() + interval '1 hour', 'r', true, 'approved', ${`policy:${policy[0]}`},
          ${createHash('sha256').update('{}').digest('hex')}, ${policy}, ${version})`.then(
        () => 'filed',
        (err: Error) => err.message,
      );
    const [active] = await db.sql<{ version: string }[]>`select version from bulkhead_active_policy()`;
    expect(await file(['larger credit notes need two people from finance'], active!.version)).toMatch(
      /does not let a call run without a person/,
    );
    expect(await file(['credit notes up to 50 run'], 'a'.repeat(64))).toMatch(/names the active policy set/);
    expect(await file(['no such policy'], active!.version)).toMatch(
      /does not let a call run without a person/,
    );
  });

  it('the 11th credit note of a day is refused with the quota’s sentence, counted across two replicas', async () => {
    // Three made above; seven more, alternating replicas and concurrently, then the 11th.
    const results = await Promise.all(Array.from({ length: 7 }, (_, i) => credit(clients[i % 2]!, 100 + i)));
    for (const r of results) expect(r.isError, r.text).toBe(false);
    const eleventh = await credit(clients[1]!, 150);
    expect(eleventh.isError).toBe(true);
    expect(eleventh.text).toContain('already issued ten credit notes today');
    const [event] = await db.sql<{ outcome: string; result_summary: { policy: string[] } }[]>`
      select outcome, result_summary from audit_events where method = 'tools/call' and tool = 'issue_credit_note'
      order by seq desc limit 1`;
    expect(event).toMatchObject({
      outcome: 'forbidden',
      result_summary: { policy: ['at most ten credit notes a day per client'] },
    });
    const [usage] = await db.sql<{ calls: number }[]>`
      select max(calls) as calls from bulkhead_policy_usage where tool = 'issue_credit_note'`;
    expect(usage!.calls).toBe(10);
  });
});

it('bulkhead approvers add --group gives a hand-issued approver the groups a policy names', async () => {
  const run = await runCli(
    ['approvers', 'add', '--person', 'Erin', '--group', 'finance', '--group', 'audit', '--json'],
    { DATABASE_URL: db.url },
  );
  expect(run.code, run.stderr).toBe(0);
  const issued = JSON.parse(run.stdout) as { id: string; groups: string[] };
  expect(issued.groups).toEqual(['finance', 'audit']);
  const [row] = await db.sql<
    { groups: string[] }[]
  >`select groups from bulkhead_tokens where id = ${issued.id}`;
  expect(row!.groups).toEqual(['finance', 'audit']);
  const bad = await runCli(['approvers', 'add', '--person', 'Erin', '--group', 'a,b'], {
    DATABASE_URL: db.url,
  });
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toContain('--group "a,b": a group name of 1 to 100 characters, without commas');
});

describe('bulkhead policy explain', () => {
  const explain = async (ref: string) => {
    const run = await runCli(['policy', 'explain', ref, '--json'], { DATABASE_URL: db.url });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    return JSON.parse(run.stdout) as Record<string, unknown>;
  };

  it('says why a call ran, waited for two people, or was refused, with each deciding policy’s text', async () => {
    expect(await explain(made.ran!)).toMatchObject({
      kind: 'approval',
      outcome: 'ran without a person (executed)',
      policies: [{ id: 'credit notes up to 50 run', text: expect.stringContaining('amount_cents <= 5000') }],
      quorum: null,
    });
    expect(await explain(made.five!)).toMatchObject({
      outcome: 'executed',
      quorum: { required: 1, groups: ['finance'], approved_by: ['console:Bob'] },
      policies: [{ id: 'credit notes up to 1000 need one person from finance' }],
    });
    expect(await explain(made.four!)).toMatchObject({
      outcome: 'executed',
      quorum: { required: 2, groups: ['finance'], approved_by: ['console:Bob', 'console:Carol'] },
      policies: [{ id: 'larger credit notes need two people from finance' }],
    });
    const [quota] = await db.sql<{ seq: string }[]>`
      select seq::text from audit_events
      where method = 'tools/call' and tool = 'issue_credit_note' and outcome = 'forbidden'`;
    expect(await explain(quota!.seq)).toMatchObject({
      kind: 'call',
      outcome: 'refused',
      reason: expect.stringContaining('already issued ten credit notes today'),
      policies: [
        { id: 'at most ten credit notes a day per client', text: expect.stringContaining('forbid') },
      ],
    });
    const text = await runCli(['policy', 'explain', made.four!], { DATABASE_URL: db.url });
    expect(text.stdout).toContain(
      'Asked of people: 2 distinct persons from finance; approved so far by console:Bob, console:Carol',
    );
    const unknown = await runCli(['policy', 'explain', 'ap_aaaaaaaaaaaa'], { DATABASE_URL: db.url });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('approval ap_aaaaaaaaaaaa does not exist');
  });
});

/** A time zone where it is about 02:00 now (night: the rule on long silences applies). */
function nightZone(): string {
  const offset = (((2 - new Date().getUTCHours()) % 24) + 24) % 24;
  const o = offset > 14 ? offset - 24 : offset;
  return o === 0 ? 'UTC' : o > 0 ? `Etc/GMT-${o}` : `Etc/GMT+${-o}`;
}

it('a silence over 4 h at night is refused with the policy’s sentence; 2 h at night is filed', async () => {
  const am = await startAlertmanager();
  const upstreams = upstreamsAt(am.url);
  const ops = await startTestServer(opsServer, { db, upstreams, policyTimeZone: nightZone() });
  const client = await connectTestClient(ops.url, await issueTestToken(db.sql, opsServer));
  try {
    const silence = (duration: string) =>
      callFlat(client, 'create_silence', {
        matchers: [{ label: 'alertname', op: '=', value: 'DiskFull' }],
        duration,
        comment: 'Disk replaced tomorrow',
      });
    const long = await silence('6h');
    expect(long.isError).toBe(true);
    expect(long.text).toContain(
      'Silences longer than 4 hours are created only on weekdays from 08:00 to 18:00',
    );
    const short = await silence('2h');
    expect(short.isError, short.text).toBe(false);
    expect((short.structured as { status: string }).status).toBe('pending_approval');
    const [event] = await db.sql<{ outcome: string; result_summary: { policy: string[] } }[]>`
      select outcome, result_summary from audit_events where tool = 'create_silence' order by seq limit 1`;
    expect(event).toMatchObject({
      outcome: 'forbidden',
      result_summary: { policy: ['long silences only in business hours'] },
    });
    const [refusal] = await db.sql<{ id: string }[]>`
      select id::text from audit_events where tool = 'create_silence' and outcome = 'forbidden'`;
    const explained = await runCli(['policy', 'explain', refusal!.id, '--json'], { DATABASE_URL: db.url });
    expect(JSON.parse(explained.stdout)).toMatchObject({
      kind: 'call',
      tool: 'create_silence',
      outcome: 'refused',
      reason: expect.stringContaining('Silences longer than 4 hours'),
      policies: [
        {
          id: 'long silences only in business hours',
          text: expect.stringContaining('context.facts.minutes > 240'),
        },
      ],
    });
  } finally {
    await client.close();
    await ops.close();
    await upstreams.close();
    await am.close();
  }
});

/** A decision as the console's login can write it by hand, under `who`'s proof: its event, then the row. */
function decideByHand(approvalId: string, who: TestApprover): Promise<string> {
  return db.as('console').then(({ sql }) =>
    sql
      .begin(async (tx) => {
        await tx`select 1 from bulkhead_console_prove(${who.token})`;
        const eventId = randomUUID();
        await createAuditWriter(tx as unknown as Sql).appendIn(tx, {
          id: eventId,
          server: 'console',
          method: 'approvals/decide',
          outcome: 'approved',
          approvalId,
          tokenId: who.approver.tokenId,
          tokenLabel: `console:${who.approver.label}`,
          requestId: 'r',
          durationMs: 0,
        });
        await tx`update bulkhead_approvals set status = 'approved', decided_by = ${`console:${who.approver.label}`},
          decided_by_token_id = ${who.approver.tokenId}, decided_arguments_hash = arguments_hash,
          decision_event_id = ${eventId}
          where id = ${approvalId}`;
        return 'approved';
      })
      .catch((err: Error) => err.message),
  );
}

it('a policy may weigh the caller’s groups: its person’s from the IdP, or those given to its token', async () => {
  await activate(`@id("reads run")
permit(principal, action, resource) when { !context.gated };

@id("credit notes only by finance's clients")
@approvals("1")
permit(principal in Bulkhead::Group::"finance", action == Admin::Action::"issue_credit_note", resource);
`);
  // A replica started now reads the set at its first call.
  const replica = await startTestServer(adminServer, { db });
  const token = await issueTestToken(db.sql, adminServer, { label: 'billing bot' });
  const client = await connectTestClient(replica.url, token);
  try {
    const refused = await credit(client, 1000);
    expect(refused.isError).toBe(true);
    expect(refused.text).toBe(
      'No policy lets this client call issue_credit_note; nothing was done. An operator can say which policy would cover it.',
    );
    const [row] = await db.sql<{ id: string }[]>`select id from bulkhead_tokens where label = 'billing bot'`;
    await db.sql`update bulkhead_tokens set groups = '{finance}' where id = ${row!.id}`;
    const filed = await credit(client, 1000);
    expect(filed.isError, filed.text).toBe(false);
    expect((filed.structured as { status: string }).status).toBe('pending_approval');
  } finally {
    await client.close();
    await replica.close();
  }
});
