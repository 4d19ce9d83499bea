// `bulkhead policy explain <approval id | event id | event number>`: why a past call ran, waited or was
// refused — the outcome, the policy set's version, and each deciding policy's text as that version had
// it; for an approval, what the policy asked of people and who has approved so far.
import { DEFAULT_POLICY, escapeJson, loadPolicySet } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { when } from '../format.ts';
import { CliError, UsageError } from '../io.ts';

/** One explanation, as `--json` prints it. */
interface Explanation {
  kind: 'approval' | 'call';
  id: string;
  server: string;
  tool: string | null;
  at: Date;
  /** `ran`, `waits` (or waited), `refused`, or the approval's status. */
  outcome: string;
  /** The sentence the model got for a refusal. */
  reason: string | null;
  /** The set that decided; null for the default set (no set approved then). */
  policy_version: string | null;
  policies: { id: string; text: string | null }[];
  quorum: { required: number; groups: string[]; approved_by: string[] } | null;
}

/** The deciding policies' texts as the version that decided had them (the default set's when none). */
async function policyTexts(
  sql: Sql,
  version: string | null,
  ids: string[],
): Promise<Explanation['policies']> {
  const [row] = version
    ? await sql<{ text: string }[]>`select text from bulkhead_policy_sets where version = ${version}`
    : [{ text: DEFAULT_POLICY }];
  const set = row ? await loadPolicySet(row.text, null) : undefined;
  return ids.map((id) => ({ id, text: set?.policies[id]?.trim() ?? null }));
}

async function explainApproval(sql: Sql, id: string): Promise<Explanation> {
  const [a] = await sql<
    {
      server: string;
      tool: string;
      status: string;
      requested_at: Date;
      required_approvals: number;
      approver_groups: string[];
      policy_version: string | null;
      policy_ids: string[];
      approved_by_policy: boolean;
      decided_by: string | null;
    }[]
  >`select server, tool, status, requested_at, required_approvals, approver_groups, policy_version, policy_ids,
      approved_by_policy, decided_by from bulkhead_approvals where id = ${id}`;
  if (!a) throw new CliError(`approval ${id} does not exist — see \`bulkhead approvals list --status all\``);
  const votes = await sql<{ decided_by: string }[]>`
    select decided_by from bulkhead_approval_votes where approval_id = ${id} order by voted_at`;
  const approvedBy = votes.length ? votes.map((v) => v.decided_by) : a.decided_by ? [a.decided_by] : [];
  return {
    kind: 'approval',
    id,
    server: a.server,
    tool: a.tool,
    at: a.requested_at,
    outcome: a.approved_by_policy ? `ran without a person (${a.status})` : a.status,
    reason: null,
    policy_version: a.policy_version,
    policies: await policyTexts(
      sql,
      a.policy_version,
      a.policy_ids.length ? a.policy_ids : ['tools that act outward wait for one person'],
    ),
    quorum: a.approved_by_policy
      ? null
      : { required: a.required_approvals, groups: a.approver_groups, approved_by: approvedBy },
  };
}

async function explainEvent(sql: Sql, ref: string): Promise<Explanation> {
  const byId = /^[0-9a-f-]{36}$/i.test(ref);
  const [e] = await sql<
    {
      id: string;
      server: string;
      tool: string | null;
      at: Date;
      outcome: string;
      approval_id: string | null;
      result_summary: { policy?: string[]; policy_version?: string; error?: string } | null;
    }[]
  >`select id::text, server, tool, at, outcome, approval_id, result_summary from audit_events
    where method = 'tools/call' and ${byId ? sql`id = ${ref}::uuid` : sql`seq = ${Number(ref)}`}`;
  if (!e)
    throw new CliError(
      `no tool call is recorded as event ${ref} (give its id, its number, or an approval id)`,
    );
  if (e.approval_id) return explainApproval(sql, e.approval_id);
  const summary = e.result_summary ?? {};
  const version = summary.policy_version ?? null;
  const ids = summary.policy ?? (e.outcome === 'ok' ? ['tools that do not act outward run'] : []);
  return {
    kind: 'call',
    id: e.id,
    server: e.server,
    tool: e.tool,
    at: e.at,
    outcome: e.outcome === 'ok' ? 'ran' : e.outcome === 'forbidden' && summary.policy ? 'refused' : e.outcome,
    reason: e.outcome === 'forbidden' ? (summary.error ?? null) : null,
    policy_version: version,
    policies: await policyTexts(sql, version, ids),
    quorum: null,
  };
}

/** The explanation for a reader. */
function describe(x: Explanation): string {
  const lines = [
    `${x.kind === 'approval' ? `Approval ${x.id}` : `Call ${x.id}`}: ${x.tool ?? '(no tool)'} on ${x.server}, ${when(x.at)}`,
    `Outcome: ${x.outcome}${x.reason ? ` — "${x.reason}"` : ''}`,
    `Policy set: ${x.policy_version ?? 'the default (no set was approved then)'}`,
  ];
  if (x.quorum)
    lines.push(
      `Asked of people: ${x.quorum.required} distinct ${x.quorum.required === 1 ? 'person' : 'persons'}` +
        `${x.quorum.groups.length ? ` from ${x.quorum.groups.join(' or ')}` : ''}; ` +
        `approved so far by ${x.quorum.approved_by.length ? x.quorum.approved_by.join(', ') : 'nobody'}`,
    );
  if (!x.policies.length)
    lines.push('Deciding policies: none recorded (refused before the policy was asked)');
  for (const p of x.policies) {
    lines.push(`Deciding policy "${p.id}":`);
    lines.push(...(p.text ?? '(its text is not in the policy table)').split('\n').map((l) => `  ${l}`));
  }
  return lines.join('\n');
}

export const explainPolicy: Command = {
  name: 'explain',
  summary: 'say why a past call ran, waited or was refused',
  help: `Usage: bulkhead policy explain <approval id | event id | event number> [--json]

Prints how the company's policy decided a past tool call: its outcome (ran,
waited for approval, refused with which sentence), the policy set's version,
and each deciding policy's text as that version had it. For an approval, also
what the policy asked of people — how many distinct persons, from which
groups — and who has approved so far. Needs the schema owner's connection.

Options:
  --json   { kind, id, server, tool, at, outcome, reason, policy_version,
             policies: [{ id, text }], quorum: { required, groups, approved_by } | null }`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(argv, { json: { type: 'boolean' } }, true);
    if (positionals.length !== 1)
      throw new UsageError('give one approval id (ap_…), audit event id or event number');
    const ref = positionals[0]!;
    if (!/^ap_[a-z2-9]{12}$/.test(ref) && !/^[0-9a-f-]{36}$/i.test(ref) && !/^\d{1,18}$/.test(ref))
      throw new UsageError(`"${ref}" is no approval id (ap_…), audit event id (a UUID) or event number`);
    return withDatabase(env, io, async ({ sql }) => {
      const x = ref.startsWith('ap_') ? await explainApproval(sql, ref) : await explainEvent(sql, ref);
      io.out(values.json ? escapeJson(JSON.stringify(x)) : describe(x));
      return 0;
    });
  },
};
