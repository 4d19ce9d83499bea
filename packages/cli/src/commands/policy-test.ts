import { readFileSync } from 'node:fs';
import {
  activePolicySet,
  decide,
  DEFAULT_POLICY,
  escapeJson,
  type PolicyOutcome,
} from '@bulkhead/core/operator';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { table } from '../format.ts';
import { CliError, UsageError } from '../io.ts';
import { checkedPolicy, serverTools } from './policy-check.ts';

/** One example request, as a fixtures file (YAML or JSON) lists them. */
const fixtureSchema = z
  .object({
    name: z.string().min(1),
    server: z.string().min(1),
    tool: z.string().min(1),
    args: z.record(z.string(), z.unknown()).default({}),
    groups: z.array(z.string()).default([]),
    owner: z.string().nullable().default(null),
    usage_today: z.number().int().min(0).default(0),
    at: z.iso.datetime({ offset: true }).optional(),
    time_zone: z.string().default('UTC'),
    expect: z.enum(['run', 'approve', 'refuse']).optional(),
    approvals: z.number().int().min(1).optional(),
  })
  .strict();
type Fixture = z.infer<typeof fixtureSchema>;

function readFixtures(file: string | undefined): Fixture[] {
  if (!file) throw new UsageError('give the fixtures file: bulkhead policy test <fixtures.yaml>');
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const parsed = z.array(fixtureSchema).min(1).safeParse(raw);
  if (!parsed.success)
    throw new UsageError(
      `${file}: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'the file'}: ${i.message}`).join('; ')}`,
    );
  return parsed.data;
}

/** Whether `outcome` is what the fixture expects (true when it expects nothing). */
function matches(f: Fixture, outcome: PolicyOutcome): boolean {
  if (f.expect && f.expect !== outcome.kind) return false;
  if (f.approvals !== undefined && (outcome.kind !== 'approve' || outcome.approvals !== f.approvals))
    return false;
  return true;
}

function said(outcome: PolicyOutcome): string {
  if (outcome.kind === 'approve')
    return `approve: ${outcome.approvals} ${outcome.approvals === 1 ? 'person' : 'persons'}${outcome.groups.length ? ` from ${outcome.groups.join(', ')}` : ''}`;
  if (outcome.kind === 'refuse') return `refuse: ${outcome.reason}`;
  return 'run';
}

export const testPolicy: Command = {
  name: 'test',
  summary: 'run example requests against a policy set: outcome and deciding policies',
  help: `Usage: bulkhead policy test <fixtures.yaml> [--file <policy.cedar>] [--json]

Asks a policy set about each example request in the fixtures file and prints
the outcome (run, approve with how many persons from which groups, or refuse
with its sentence) and the policies that decided it. Without --file, the
active set (or the default before any was approved), read from the database.
A fixture with "expect" (and "approvals") that the outcome differs from is a
failure: exit code 1.

A fixtures file is a list of requests (YAML or JSON):
  - name: a credit note of 20 runs
    server: admin
    tool: issue_credit_note
    args: { invoice_number: R-2026-0001, amount_cents: 2000, reason: goodwill gesture }
    groups: []                 # the caller's groups (default none)
    usage_today: 0             # calls of the tool by the token today, before this one
    at: 2026-12-09T14:30:00Z   # when (default now), in time_zone (default UTC)
    expect: run                # run, approve or refuse (optional)
    approvals: 1               # with expect: approve (optional)

Options:
  --file <policy.cedar>  the set to test (checked against the servers' tools first)
  --json                 one object a fixture: name, outcome, policies, errors, ok`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(
      argv,
      { file: { type: 'string' }, json: { type: 'boolean' } },
      true,
    );
    if (positionals.length !== 1) throw new UsageError('give one fixtures file');
    const fixtures = readFixtures(positionals[0]);
    const tools = await serverTools();
    const text = values.file
      ? readFileSync(values.file, 'utf8')
      : await withDatabase(env, io, async ({ sql }) => (await activePolicySet(sql))?.text ?? DEFAULT_POLICY);
    const set = await checkedPolicy(text, values.file ?? 'the active policy set', tools);
    const results = fixtures.map((f) => {
      const tool = tools[f.server]?.find((t) => t.name === f.tool);
      if (!tool) throw new CliError(`fixture "${f.name}": ${f.server} has no tool ${f.tool}`);
      const args = tool.input.safeParse(f.args);
      if (!args.success)
        throw new CliError(
          `fixture "${f.name}": the arguments are not valid for ${f.tool}: ${args.error.issues[0]?.message}`,
        );
      const outcome = decide(set, {
        server: f.server,
        tool: f.tool,
        args: args.data as Record<string, unknown>,
        gated: tool.approval !== undefined,
        readOnly: tool.annotations.readOnlyHint,
        principal: { tokenId: 'fixture', owner: f.owner, scopes: [tool.scope], groups: f.groups },
        usageToday: f.usage_today,
        now: f.at ? new Date(f.at) : new Date(),
        timeZone: f.time_zone,
        facts: tool.policyFacts?.of(args.data),
      });
      return { fixture: f, outcome, ok: matches(f, outcome) };
    });
    if (values.json)
      io.out(
        escapeJson(
          JSON.stringify(results.map((r) => ({ name: r.fixture.name, outcome: r.outcome, ok: r.ok }))),
        ),
      );
    else
      io.out(
        table(
          ['', 'REQUEST', 'OUTCOME', 'DECIDED BY'],
          results.map((r) => [
            r.ok ? 'ok' : 'FAIL',
            r.fixture.name,
            said(r.outcome),
            r.outcome.policies.join('; ') || '(no policy)',
          ]),
        ),
      );
    const failed = results.filter((r) => !r.ok).length;
    if (!values.json)
      io.out(
        `${results.length} requests, ${failed} not as expected (policy set ${set.version.slice(0, 12)}).`,
      );
    return failed ? 1 : 0;
  },
};
