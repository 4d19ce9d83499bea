import { createAuditWriter } from '@bulkhead/audit';
import {
  APPROVAL_STATUSES,
  ApprovalDecisionError,
  createTokenVerifier,
  approvalDeliveries,
  approvalEvents,
  decideApproval,
  effectiveStatus,
  escapeJson,
  getApproval,
  listApprovals,
  visible,
  visibleLines,
  type ApprovalRecord,
  type ApprovalStatus,
} from '@bulkhead/core/operator';
import { groupRole, type Sql } from '@bulkhead/db';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { age, table, when } from '../format.ts';
import { CliError, UsageError, type Io } from '../io.ts';

/** The JSON form of an approval for scripts: snake_case, ISO times, redacted arguments only. */
export function approvalJson(approval: ApprovalRecord) {
  return {
    id: approval.id,
    server: approval.server,
    tool: approval.tool,
    status: effectiveStatus(approval),
    preview: approval.preview,
    arguments: approval.argumentsRedacted,
    arguments_hash: approval.argumentsHash,
    requested_at: approval.requestedAt.toISOString(),
    requested_by: approval.requestedByLabel,
    requested_by_token_id: approval.requestedByTokenId,
    customer_id: approval.customerId,
    expires_at: approval.expiresAt.toISOString(),
    decided_at: approval.decidedAt?.toISOString() ?? null,
    decided_by: approval.decidedBy,
    reason: approval.decisionReason,
    executed_at: approval.executedAt?.toISOString() ?? null,
    executed_by: approval.executedBy,
    duration_ms: approval.durationMs,
    result: approval.result ?? null,
    error: approval.error,
    as_task: approval.asTask,
    withdrawn_at: approval.withdrawnAt?.toISOString() ?? null,
  };
}

function oneId(positionals: string[]): string {
  const id = positionals[0];
  if (!id || positionals.length > 1)
    throw new UsageError('give exactly one approval id (see `bulkhead approvals list`)');
  return id;
}

async function mustGet(sql: Sql, id: string): Promise<ApprovalRecord> {
  const a = await getApproval(sql, id);
  if (!a) throw new CliError(`approval ${id} does not exist — see \`bulkhead approvals list --status all\``);
  return a;
}

function indent(text: string, by = 14): string {
  return text.replace(/\n/g, `\n${' '.repeat(by)}`);
}

// Previews, arguments, labels and errors carry customer text: every value printed goes through visible()
// (JSON through visibleLines, whose line breaks are layout), so no escape sequence reaches the terminal.
function printApproval(io: Io, approval: ApprovalRecord) {
  const row = (name: string, value: string) => io.out(`  ${name.padEnd(11)} ${visible(value)}`);
  const rows = (name: string, json: unknown) =>
    io.out(`  ${name.padEnd(11)} ${indent(visibleLines(JSON.stringify(json, null, 2)))}`);
  io.out(`Approval ${approval.id} — ${effectiveStatus(approval)}`);
  row('server', approval.server);
  row('tool', approval.tool);
  row('preview', approval.preview);
  rows('arguments', approval.argumentsRedacted);
  row('hash', `sha256:${approval.argumentsHash}`);
  // What the effect will use besides the arguments, as read when filed; the run refuses if it differs.
  if (approval.approvedValues) rows('values', approval.approvedValues);
  row(
    'requested',
    `${when(approval.requestedAt)} UTC by "${approval.requestedByLabel ?? 'unknown'}" (token ${approval.requestedByTokenId ?? '-'})${approval.customerId ? `, customer ${approval.customerId}` : ''}`,
  );
  if (approval.asTask) row('as task', 'requested as an MCP task: the approval id is its task id');
  row('expires', `${when(approval.expiresAt)} UTC`);
  if (approval.withdrawnAt)
    row(
      'withdrawn',
      `${when(approval.withdrawnAt)} UTC by the requester, before anyone decided; it will never run`,
    );
  if (approval.decidedAt)
    row(
      'decided',
      `${when(approval.decidedAt)} UTC by ${approval.decidedBy}${approval.decisionReason ? ` — "${approval.decisionReason}"` : ''}`,
    );
  if (approval.executedAt)
    row('ran', `${when(approval.executedAt)} UTC on ${approval.executedBy} in ${approval.durationMs} ms`);
  if (approval.result !== null && approval.result !== undefined) rows('result', approval.result);
  if (approval.error) row('error', approval.error);
}

const STATUS_HELP = `pending (default), approved, rejected, executed, expired, failed, withdrawn or all`;

function statusOption(value: string | undefined): ApprovalStatus | undefined {
  if (value === undefined || value === 'all') return undefined;
  if (!(APPROVAL_STATUSES as readonly string[]).includes(value))
    throw new UsageError(`--status: "${value}" is not a status; one of: ${STATUS_HELP}`);
  return value as ApprovalStatus;
}

const list: Command = {
  name: 'list',
  summary: 'list approvals, pending ones by default',
  help: `Usage: bulkhead approvals list [--status <s>] [--server <name>] [--tool <name>] [--limit <n>] [--json]

Lists approval requests, newest first: id, server, tool, status, who asked,
age and the preview a person approves.

Options:
  --status <s>      ${STATUS_HELP}
  --server <name>   only requests of this server
  --tool <name>     only requests of this tool
  --limit <n>       at most n rows (default 50, at most 500)
  --json            one JSON array (redacted arguments, never secret values)`,
  async run(argv, { env, io }) {
    const { values } = parse(argv, {
      status: { type: 'string', default: 'pending' },
      server: { type: 'string' },
      tool: { type: 'string' },
      limit: { type: 'string', default: '50' },
      json: { type: 'boolean', default: false },
    });
    const status = statusOption(values.status);
    const limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500)
      throw new UsageError('--limit: a whole number from 1 to 500');
    return withDatabase(env, io, async ({ sql }) => {
      const { approvals, truncated } = await listApprovals(sql, {
        limit,
        ...(status ? { status } : {}),
        ...(values.server ? { server: values.server } : {}),
        ...(values.tool ? { tool: values.tool } : {}),
      });
      if (values.json) {
        io.out(escapeJson(JSON.stringify(approvals.map(approvalJson))));
        return 0;
      }
      if (!approvals.length) {
        io.out(
          status === 'pending'
            ? 'Nothing waits for approval (--status all shows every request).'
            : 'No approvals match.',
        );
        return 0;
      }
      io.out(
        table(
          ['ID', 'SERVER', 'TOOL', 'STATUS', 'REQUESTED BY', 'AGE', 'PREVIEW'],
          approvals.map((a) => {
            const preview = visible(a.preview);
            return [
              a.id,
              visible(a.server),
              visible(a.tool),
              effectiveStatus(a),
              visible(a.requestedByLabel ?? '-'),
              age(a.requestedAt),
              preview.length > 70 ? `${preview.slice(0, 69)}…` : preview,
            ];
          }),
        ),
      );
      if (truncated) io.out(`(first ${limit} shown; narrow with --server, --tool or raise --limit)`);
      return 0;
    });
  },
};

const show: Command = {
  name: 'show',
  summary: 'show one approval with its audit trail and deliveries',
  help: `Usage: bulkhead approvals show <id> [--json]

Shows one approval: preview, arguments (secret fields as hashes) and their
hash, who asked, the decision, the result, every audit event that names it,
and its notifications and other deliveries.`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(argv, { json: { type: 'boolean', default: false } }, true);
    const id = oneId(positionals);
    return withDatabase(env, io, async ({ sql }) => {
      const a = await mustGet(sql, id);
      const events = await approvalEvents(sql, id);
      const deliveries = await approvalDeliveries(sql, id);
      if (values.json) {
        io.out(
          escapeJson(
            JSON.stringify({
              ...approvalJson(a),
              events: events.map((e) => ({
                at: e.at.toISOString(),
                server: e.server,
                method: e.method,
                outcome: e.outcome,
                by: e.tokenLabel,
                summary: e.resultSummary,
              })),
              deliveries: deliveries.map((d) => ({
                id: d.id,
                kind: d.kind,
                status: d.status,
                attempts: d.attempts,
                delivered_at: d.deliveredAt?.toISOString() ?? null,
                last_error: d.lastError,
              })),
            }),
          ),
        );
        return 0;
      }
      printApproval(io, a);
      io.out('');
      io.out('Audit trail:');
      if (!events.length) io.out('  (no events)');
      for (const e of events)
        io.out(
          `  ${when(e.at)} UTC  ${e.method.padEnd(18)} ${e.outcome.padEnd(17)} ${visible(e.tokenLabel ?? '')}`.trimEnd(),
        );
      if (deliveries.length) {
        io.out('');
        io.out('Deliveries:');
        for (const d of deliveries)
          io.out(
            `  #${d.id} ${d.kind}: ${d.status} after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}${d.lastError ? ` (last error: ${visible(d.lastError)})` : ''}`,
          );
      }
      return 0;
    });
  },
};

async function settle(sql: Sql, id: string, timeoutMs: number): Promise<ApprovalRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const approval = (await getApproval(sql, id))!;
    if (approval.status !== 'approved' || Date.now() > deadline) return approval;
    await new Promise((r) => setTimeout(r, 200));
  }
}

function decision(kind: 'approve' | 'reject'): Command {
  const approve = kind === 'approve';
  return {
    name: kind,
    summary: approve
      ? 'approve a pending request; its server runs it within a second'
      : 'reject a pending request with a reason; it never runs',
    help: approve
      ? `Usage: bulkhead approvals approve <id> [--approver-token <token>] [--reason <text>] [--wait] [--json]

Approves a pending request. The server that owns the tool runs it exactly
once, with exactly the arguments shown by \`approvals show\`, within a second
(or at its next start when it is not running). You decide as the approver of
your approver token, recorded by its id and label; a person may not approve a
request filed with a token issued to them (BULKHEAD_ALLOW_SELF_APPROVAL=true
allows it in a one-person shop). The decision is written under the console's
database role (SET ROLE bulkhead_console), the only role that may decide.

Options:
  --approver-token <t>  your approver token (or BULKHEAD_APPROVER_TOKEN)
  --reason <text>       why (optional when approving; kept in the audit log)
  --wait                wait up to 30 s for the outcome and print it
  --json                print the approval as JSON`
      : `Usage: bulkhead approvals reject <id> --reason <text> [--approver-token <token>] [--json]

Rejects a pending request; it never runs. The reason is required: the
requester sees it through get_approval_status. You decide as the approver of
your approver token.

Options:
  --approver-token <t>  your approver token (or BULKHEAD_APPROVER_TOKEN)
  --reason <text>       why (required)
  --json                print the approval as JSON`,
    async run(argv, { env, io }) {
      const { values, positionals } = parse(
        argv,
        {
          reason: { type: 'string' },
          'approver-token': { type: 'string' },
          json: { type: 'boolean', default: false },
          ...(approve ? { wait: { type: 'boolean', default: false } } : {}),
        },
        true,
      );
      const id = oneId(positionals);
      if (!approve && !values.reason?.trim())
        throw new UsageError('--reason is required to reject: say why, the requester will see it');
      const token = values['approver-token'] ?? env.BULKHEAD_APPROVER_TOKEN;
      if (!token)
        throw new UsageError(
          'an approver token is required: --approver-token <token> or BULKHEAD_APPROVER_TOKEN (issue one with `bulkhead approvers add --person <person> --label <label>`)',
        );
      return withDatabase(env, io, async ({ sql }) => {
        const verifier = createTokenVerifier(sql, 'console', 'approver', { listen: false });
        const verdict = await verifier.verify(token);
        await verifier.close();
        if (!verdict.ok)
          throw new CliError(
            'the approver token is not valid: it is unknown, expired, revoked, or not an approver token (MCP tokens never decide)',
          );
        let approval: ApprovalRecord;
        try {
          approval = await decideApproval(sql, createAuditWriter(sql), {
            id,
            decision: kind,
            reason: values.reason,
            via: 'cli',
            proof: token,
            allowSelfApproval: env.BULKHEAD_ALLOW_SELF_APPROVAL,
            asRole: groupRole('console'),
          });
        } catch (err) {
          if (err instanceof ApprovalDecisionError)
            throw new CliError(
              err.code === 'unknown'
                ? `${err.message} — see \`bulkhead approvals list --status all\``
                : err.message,
            );
          throw err;
        }
        if ((values as { wait?: boolean }).wait) approval = await settle(sql, id, 30_000);
        if (values.json) {
          io.out(escapeJson(JSON.stringify(approvalJson(approval))));
          return 0;
        }
        return printDecided(io, approval, approve);
      });
    },
  };
}

/** What a decision came to, for a reader; the exit code is 1 when the approved action failed. */
function printDecided(io: Io, approval: ApprovalRecord, approved: boolean): number {
  if (!approved) {
    io.out(
      `Rejected ${approval.id} (${visible(approval.tool)} on ${visible(approval.server)}): it will never run.`,
    );
    return 0;
  }
  io.out(
    `Approved ${approval.id} (${visible(approval.tool)} on ${visible(approval.server)}): ${visible(approval.preview)}`,
  );
  if (approval.status === 'executed')
    io.out(`Executed on ${visible(approval.executedBy ?? '-')} in ${approval.durationMs} ms.`);
  else if (approval.status === 'failed') {
    io.out(`It failed: ${visible(approval.error ?? '')}`);
    return 1;
  } else
    io.out(
      `The ${visible(approval.server)} server runs it within a second (or at its next start); \`bulkhead approvals show ${approval.id}\` shows the outcome.`,
    );
  return 0;
}

export const approvalsCommand = group('approvals', 'List, inspect, approve and reject gated actions.', [
  list,
  show,
  decision('approve'),
  decision('reject'),
]);
