import { readFileSync } from 'node:fs';
import { createAuditWriter } from '@bulkhead/audit';
import {
  decidePolicySet,
  DEFAULT_POLICY,
  escapeJson,
  listPolicySets,
  PolicyChangeRefused,
  proposePolicySet,
} from '@bulkhead/core/operator';
import { groupRole } from '@bulkhead/db';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import type { CliEnv } from '../env.ts';
import { table, when } from '../format.ts';
import { CliError, UsageError } from '../io.ts';
import { checkedPolicy } from './policy-check.ts';
import { explainPolicy } from './policy-explain.ts';
import { testPolicy } from './policy-test.ts';

function readPolicyFile(file: string | undefined): string {
  if (!file) throw new UsageError('give the policy file: bulkhead policy propose <file.cedar>');
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
}

function proofOf(values: { 'approver-token'?: string | undefined }, env: CliEnv): string {
  const token = values['approver-token'] ?? env.BULKHEAD_APPROVER_TOKEN;
  if (!token)
    throw new UsageError(
      'an operator token is required: --approver-token <token> or BULKHEAD_APPROVER_TOKEN (an approver token with tokens:manage, from `bulkhead approvers add --can-manage-tokens`)',
    );
  return token;
}

const TOKEN_HELP = `  --approver-token <t>  your operator token (or BULKHEAD_APPROVER_TOKEN): who you are, proven`;

const propose: Command = {
  name: 'propose',
  summary: 'check a policy set against the servers’ tools and file it for approval',
  help: `Usage: bulkhead policy propose <file.cedar> [--approver-token <token>] [--json]

Checks the Cedar policy set in the file against every server's tools (an
argument a tool does not have, or compared as the wrong type, is an error;
every policy needs an @id) and files it as proposed. It takes effect only once
another operator approves it: bulkhead policy approve <version>.

Options:
${TOKEN_HELP}
  --json                print { "version": … }`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(
      argv,
      { 'approver-token': { type: 'string' }, json: { type: 'boolean' } },
      true,
    );
    if (positionals.length > 1) throw new UsageError('give one policy file');
    const file = positionals[0];
    const text = readPolicyFile(file);
    const set = await checkedPolicy(text, file!);
    const proof = proofOf(values, env);
    return withDatabase(env, io, async ({ sql }) => {
      const version = await proposePolicySet(
        sql,
        createAuditWriter(sql),
        { proof, asRole: groupRole('console'), via: 'cli' },
        text,
      ).catch((err: unknown) => {
        throw err instanceof PolicyChangeRefused ? new CliError(err.message) : err;
      });
      if (values.json) io.out(JSON.stringify({ version }));
      else {
        io.out(`Proposed policy set ${version} (${Object.keys(set.policies).length} policies).`);
        io.out(`Another operator approves it with: bulkhead policy approve ${version}`);
      }
      return 0;
    });
  },
};

function decideCommand(approve: boolean): Command {
  const name = approve ? 'approve' : 'reject';
  return {
    name,
    summary: approve
      ? 'make a proposed policy set the active one (not its proposer)'
      : 'reject a proposed policy set',
    help: `Usage: bulkhead policy ${name} <version> ${approve ? '[--reason <text>]' : '--reason <text>'} [--approver-token <token>]

${
  approve
    ? `Checks the proposed set against the servers' tools again, then makes it the active one:
every server decides its calls by it within a second. The set that was active is
retired. Refused when you proposed it yourself.`
    : 'Rejects a proposed set; it never takes effect.'
}

Options:
${TOKEN_HELP}
  --reason <text>       why (at most 500 characters)${approve ? '' : '; required'}`,
    async run(argv, { env, io }) {
      const { values, positionals } = parse(
        argv,
        { 'approver-token': { type: 'string' }, reason: { type: 'string' } },
        true,
      );
      const version = positionals[0];
      if (!version || positionals.length > 1)
        throw new UsageError(`give one version (see \`bulkhead policy show --all\`)`);
      if (!approve && !values.reason?.trim()) throw new UsageError('--reason is required to reject: say why');
      if ((values.reason ?? '').length > 500) throw new UsageError('--reason: at most 500 characters');
      const proof = proofOf(values, env);
      return withDatabase(env, io, async ({ sql }) => {
        const proposed = (await listPolicySets(sql)).find((s) => s.version === version);
        if (!proposed)
          throw new CliError(`no policy set has version ${version} (see \`bulkhead policy show --all\`)`);
        if (approve) await checkedPolicy(proposed.text, `policy set ${version}`);
        const decided = await decidePolicySet(
          sql,
          createAuditWriter(sql),
          { proof, asRole: groupRole('console'), via: 'cli' },
          { version, approve, reason: values.reason?.trim() },
        ).catch((err: unknown) => {
          throw err instanceof PolicyChangeRefused ? new CliError(err.message) : err;
        });
        io.out(
          approve
            ? `Policy set ${version} is active (proposed by ${decided.proposedBy}, approved by ${decided.decidedBy}).`
            : `Policy set ${version} is rejected.`,
        );
        return 0;
      });
    },
  };
}

const show: Command = {
  name: 'show',
  summary: 'print the active policy set and its version (or every version)',
  help: `Usage: bulkhead policy show [--all] [--json]

Prints the active policy set's text and version; before any set was approved,
the default (every tool that acts outward waits for one person).

Options:
  --all    every version, newest first: status, who proposed and decided it, when
  --json   the same as JSON`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, { all: { type: 'boolean' }, json: { type: 'boolean' } });
    return withDatabase(env, io, async ({ sql }) => {
      const sets = await listPolicySets(sql);
      if (values.all) {
        const rows = sets.map(({ text: _text, ...s }) => s);
        if (values.json) io.out(escapeJson(JSON.stringify(rows)));
        else
          io.out(
            table(
              ['VERSION', 'STATUS', 'PROPOSED BY', 'PROPOSED', 'DECIDED BY', 'DECIDED'],
              rows.map((s) => [
                s.version.slice(0, 12),
                s.status,
                s.proposedBy,
                when(s.proposedAt),
                s.decidedBy ?? '',
                s.decidedAt ? when(s.decidedAt) : '',
              ]),
            ),
          );
        return 0;
      }
      const active = sets.find((s) => s.status === 'active');
      const shown = active ?? { version: 'default', text: DEFAULT_POLICY };
      if (values.json)
        io.out(escapeJson(JSON.stringify({ version: shown.version, default: !active, text: shown.text })));
      else {
        io.out(
          `// policy set ${shown.version}${active ? `, approved by ${active.decidedBy} on ${when(active.decidedAt!)}` : ' (no set approved yet)'}`,
        );
        io.out(shown.text.trimEnd());
      }
      return 0;
    });
  },
};

export const policyCommand = group(
  'policy',
  'Propose, approve, show, test and explain who must approve what (Cedar policy).',
  [propose, decideCommand(true), decideCommand(false), show, testPolicy, explainPolicy],
);
