import { readFileSync } from 'node:fs';
import {
  cedarSchema,
  decide,
  DEFAULT_POLICY,
  loadPolicySet,
  PolicySetInvalid,
  policyTools,
  timeOf,
  type PolicyRequest,
  type PolicySet,
} from '@bulkhead/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { customerServer } from '../servers/customer/src/server.ts';
import { devKnowledgeServer } from '../servers/dev-knowledge/src/server.ts';
import { opsServer } from '../servers/ops/src/server.ts';
import { root } from './helpers.ts';

// Issue 47, the policy itself: the Cedar schema made from the servers' tools, the shipped default
// (today's gates) and the shipped examples, decided by the official Cedar engine.

const SERVERS = {
  admin: adminServer,
  customer: customerServer,
  'dev-knowledge': devKnowledgeServer,
  ops: opsServer,
};
const schema = cedarSchema(
  Object.fromEntries(Object.entries(SERVERS).map(([name, def]) => [name, policyTools(def.catalog)])),
);
const EXAMPLES = readFileSync(`${root}packages/core/src/pipeline/policy/examples.cedar`, 'utf8');
// A Wednesday, 14:30 UTC.
const NOON = new Date('2026-12-09T14:30:00Z');

const tool = (server: keyof typeof SERVERS, name: string) =>
  SERVERS[server].catalog.tools.find((t) => t.name === name)!;

function request(
  server: keyof typeof SERVERS,
  name: string,
  args: Record<string, unknown>,
  extra: Partial<PolicyRequest> = {},
): PolicyRequest {
  const t = tool(server, name);
  return {
    server,
    tool: name,
    args,
    gated: t.approval !== undefined,
    readOnly: t.annotations.readOnlyHint,
    principal: { tokenId: 'tok1', owner: 'Ada', scopes: [t.scope], groups: [] },
    usageToday: 0,
    now: NOON,
    ...extra,
  };
}

describe('the default policy: today’s gates', () => {
  let set: PolicySet;
  beforeAll(async () => {
    set = await loadPolicySet(DEFAULT_POLICY, schema);
  });

  it('runs every tool without a gate and files every gated one for one person, on every server', () => {
    let gated = 0;
    for (const [server, def] of Object.entries(SERVERS)) {
      for (const t of def.catalog.tools) {
        const outcome = decide(set, request(server as keyof typeof SERVERS, t.name, {}));
        if (t.approval) {
          gated++;
          expect({ tool: t.name, ...outcome }).toMatchObject({
            tool: t.name,
            kind: 'approve',
            approvals: 1,
            groups: [],
          });
          expect(outcome.policies).toEqual(['tools that act outward wait for one person']);
        } else expect({ tool: t.name, kind: outcome.kind }).toEqual({ tool: t.name, kind: 'run' });
      }
    }
    expect(gated).toBeGreaterThanOrEqual(5);
  });
});

describe('the shipped examples', () => {
  let set: PolicySet;
  beforeAll(async () => {
    set = await loadPolicySet(EXAMPLES, schema);
  });
  const credit = (cents: number, extra: Partial<PolicyRequest> = {}) =>
    decide(
      set,
      request(
        'admin',
        'issue_credit_note',
        { invoice_number: 'R-2026-0001', amount_cents: cents, reason: 'goodwill' },
        extra,
      ),
    );

  it('a credit note of €20 runs, naming the policy that let it', () => {
    expect(credit(2_000)).toEqual({ kind: 'run', policies: ['credit notes up to 50 run'], errors: [] });
  });

  it('€500 waits for one person from finance; €5,000 for two', () => {
    expect(credit(50_000)).toMatchObject({ kind: 'approve', approvals: 1, groups: ['finance'] });
    expect(credit(500_000)).toMatchObject({
      kind: 'approve',
      approvals: 2,
      groups: ['finance'],
      policies: ['larger credit notes need two people from finance'],
    });
  });

  it('the 11th credit note of a day is refused with the quota’s sentence, whatever the amount', () => {
    expect(credit(2_000, { usageToday: 9 }).kind).toBe('run');
    const refused = credit(2_000, { usageToday: 10 });
    expect(refused).toMatchObject({
      kind: 'refuse',
      policies: ['at most ten credit notes a day per client'],
    });
    expect(refused.kind === 'refuse' && refused.reason).toMatch(/already issued ten credit notes today/);
  });

  it('send_invoice needs finance; other gated tools one person from anywhere; reads run', () => {
    expect(decide(set, request('admin', 'send_invoice', { invoice_number: 'R-2026-0001' }))).toMatchObject({
      kind: 'approve',
      approvals: 1,
      groups: ['finance'],
    });
    expect(
      decide(set, request('ops', 'create_silence', { matchers: [], duration: '1h', comment: 'x' })),
    ).toMatchObject({
      kind: 'approve',
      approvals: 1,
      groups: [],
    });
    expect(decide(set, request('customer', 'get_account_balance', {})).kind).toBe('run');
  });
});

describe('a policy set that is wrong is refused before it can decide anything', () => {
  const invalid = async (text: string) => {
    try {
      await loadPolicySet(text, schema);
    } catch (err) {
      if (err instanceof PolicySetInvalid) return err.findings.join('\n');
      throw err;
    }
    return 'valid';
  };

  it('an argument the tool does not have, or compared as the wrong type', async () => {
    expect(
      await invalid(
        `@id("x") permit(principal, action == Admin::Action::"issue_credit_note", resource) when { context.args.amount > 5 };`,
      ),
    ).toMatch(/policy "x".*amount/s);
    expect(
      await invalid(
        `@id("y") permit(principal, action == Admin::Action::"issue_credit_note", resource) when { context.args.reason > 5 };`,
      ),
    ).toMatch(/policy "y"/);
    expect(
      await invalid(`@id("z") permit(principal, action == Admin::Action::"no_such_tool", resource);`),
    ).toMatch(/no_such_tool/);
  });

  it('a policy without a name, two of one name, or annotations where they mean nothing', async () => {
    expect(await invalid(`permit(principal, action, resource);`)).toMatch(/has no @id/);
    expect(
      await invalid(
        `@id("a") permit(principal, action, resource);\n@id("a") permit(principal, action, resource);`,
      ),
    ).toMatch(/two policies are called "a"/);
    expect(await invalid(`@id("a") @approvals("0") permit(principal, action, resource);`)).toMatch(
      /from 1 to 9/,
    );
    expect(await invalid(`@id("a") @approvals("1") forbid(principal, action, resource);`)).toMatch(
      /belongs on a permit/,
    );
    expect(await invalid(`@id("a") @groups("finance") permit(principal, action, resource);`)).toMatch(
      /needs @approvals/,
    );
    expect(await invalid(`@id("a") permit(principal, action, resource`)).not.toBe('valid');
    expect(await invalid('')).toMatch(/no policy/);
  });

  it('a call no policy permits is refused with a sentence that says so', async () => {
    const set = await loadPolicySet(
      `@id("reads") permit(principal, action, resource) when { context.read_only };`,
      schema,
    );
    const outcome = decide(
      set,
      request('admin', 'issue_credit_note', { invoice_number: 'R', amount_cents: 1, reason: 'r' }),
    );
    expect(outcome).toMatchObject({ kind: 'refuse', policies: [] });
    expect(outcome.kind === 'refuse' && outcome.reason).toMatch(
      /No policy lets this client call issue_credit_note/,
    );
  });
});

it('the time a policy sees is the policy’s time zone: hour, minute, weekday from Monday', () => {
  expect(timeOf(NOON)).toEqual({ hour: 14, minute: 30, weekday: 3 });
  expect(timeOf(NOON, 'Asia/Tokyo')).toEqual({ hour: 23, minute: 30, weekday: 3 });
  expect(timeOf(new Date('2026-12-13T23:30:00Z'), 'Europe/Berlin')).toEqual({
    hour: 0,
    minute: 30,
    weekday: 1,
  });
});
