/** @jsxImportSource hono/jsx */
import type {
  ApprovalDelivery,
  ApprovalEvent,
  ApprovalRecord,
  ApprovalStatus,
} from '@bulkhead/core/operator';
import { effectiveStatus } from '@bulkhead/core/operator';
import { Badge, LookClosely, ToolOn } from '../../layout/approval-parts.tsx';
import { Json } from '../../layout/json.tsx';
import { Layout } from '../../layout/layout.tsx';
import { ago, when } from '../../layout/time.ts';
import type { Approver } from '../../sessions.ts';
import {
  argumentFindings,
  ArgumentTable,
  findings,
  Findings,
  mergeFindings,
  Shown,
  type ArgumentRow,
  type TextFindings,
} from '../../visible-text.tsx';

/**
 * What the decision came to, shown after the decision redirects back here. The sentence comes from the
 * approval's state, never from the address: an undecided request has none, whatever the URL says.
 */
function DecidedNotice({
  approval: a,
  status,
  votes,
}: {
  approval: ApprovalRecord;
  status: ApprovalStatus;
  votes: readonly Vote[];
}) {
  if (status === 'pending' && votes.length)
    return (
      <div class="notice" role="status">
        Your approval is recorded: {quorum(a, votes.length)}. Another person must approve before it runs.
      </div>
    );
  const said: Partial<Record<ApprovalStatus, string>> = {
    rejected: 'Rejected. It will never run.',
    executed: 'Approved and executed.',
    failed: 'Approved, but it failed; see the error below.',
    approved: `Approved. The ${a.server} server runs it within a second.`,
  };
  const sentence = said[status];
  if (!sentence) return null;
  return (
    <div class="notice" role="status">
      {sentence} {status === 'approved' && <a href={`/approvals/${a.id}`}>Refresh to see the result</a>}
    </div>
  );
}

/** One person's approval of a request that needs more than one. */
export interface Vote {
  decidedBy: string;
  votedAt: Date;
}

/** "1 of 2 approvals from finance": where a request that needs more than one person stands. */
function quorum(a: ApprovalRecord, given: number): string {
  const from = a.approverGroups.length ? ` from ${a.approverGroups.join(' or ')}` : '';
  return `${given} of ${a.requiredApprovals} approval${a.requiredApprovals === 1 ? '' : 's'}${from}`;
}

/** What the company's policy decided about the request: who must approve it, and who has. */
function PolicyRows({ approval: a, votes }: { approval: ApprovalRecord; votes: readonly Vote[] }) {
  if (a.approvedByPolicy)
    return (
      <>
        <dt>Policy</dt>
        <dd>
          Ran without a person: the company's policy <Shown text={`“${a.policyIds.join('”, “')}”`} /> lets it
        </dd>
      </>
    );
  const asks = a.requiredApprovals > 1 || a.approverGroups.length > 0;
  return (
    <>
      {a.policyIds.length > 0 && <dt>Policy</dt>}
      {a.policyIds.length > 0 && (
        <dd>
          <Shown text={`“${a.policyIds.join('”, “')}”`} />
        </dd>
      )}
      {asks && <dt>Approvals</dt>}
      {asks && (
        <dd id="quorum">
          {quorum(a, a.status === 'pending' ? votes.length : Math.max(votes.length, a.decidedAt ? 1 : 0))}
          {votes.length > 0 && (
            <>
              {' — by '}
              <Shown text={votes.map((v) => v.decidedBy).join(', ')} />
            </>
          )}
        </dd>
      )}
    </>
  );
}

/** The action's summary and its story: who asked, when, the decision, the run and its result. */
function ActionCard({
  approval: a,
  status,
  previewFindings,
  votes,
}: {
  approval: ApprovalRecord;
  status: ApprovalStatus;
  previewFindings: TextFindings;
  votes: readonly Vote[];
}) {
  return (
    <section class="card" aria-labelledby="what">
      <h2 id="what">The action</h2>
      <p class="preview">
        <Shown text={a.preview} />
      </p>
      <Findings of={previewFindings} />
      <dl class="meta">
        <dt>Status</dt>
        <dd>
          <Badge status={status} />
        </dd>
        <ToolOn approval={a} />
        <dt>Requested by</dt>
        <dd>
          <Shown text={a.requestedByLabel ?? 'unknown'} />
          {a.customerId && (
            <>
              , for customer <Shown text={a.customerId} />
            </>
          )}
        </dd>
        <dt>Requested</dt>
        <dd>
          <time datetime={a.requestedAt.toISOString()}>{when(a.requestedAt)}</time> ({ago(a.requestedAt)})
        </dd>
        <dt>Expires</dt>
        <dd>
          <time datetime={a.expiresAt.toISOString()}>{when(a.expiresAt)}</time>
        </dd>
        <PolicyRows approval={a} votes={votes} />
        <ActionStory approval={a} />
      </dl>
    </section>
  );
}

/** The rows of the action card that exist once something happened: decided, withdrawn, ran, failed. */
function ActionStory({ approval: a }: { approval: ApprovalRecord }) {
  return (
    <>
      {a.decidedAt && <dt>Decided</dt>}
      {a.decidedAt && (
        <dd>
          {when(a.decidedAt)} by <Shown text={a.decidedBy ?? 'unknown'} />
          {a.decisionReason && (
            <>
              {' — “'}
              <Shown text={a.decisionReason} />
              {'”'}
            </>
          )}
        </dd>
      )}
      {a.withdrawnAt && <dt>Withdrawn</dt>}
      {a.withdrawnAt && (
        <dd>{when(a.withdrawnAt)} by the requester, before anyone decided: it will never run</dd>
      )}
      {a.asTask && <dt>Asked as</dt>}
      {a.asTask && (
        <dd>
          an MCP task: the client follows it by its task id, <code>{a.id}</code>, and receives the result
        </dd>
      )}
      {a.executedAt && <dt>Ran</dt>}
      {a.executedAt && (
        <dd>
          {when(a.executedAt)} in {a.durationMs} ms
        </dd>
      )}
      {a.result !== null && a.result !== undefined && <dt>Result</dt>}
      {a.result !== null && a.result !== undefined && (
        <dd>
          <Json value={a.result} />
        </dd>
      )}
      {a.error && <dt>Error</dt>}
      {a.error && (
        <dd>
          <Shown text={a.error} />
        </dd>
      )}
      {a.filedInTrace && <dt>Trace</dt>}
      {a.filedInTrace && (
        <dd>
          <code>{a.filedInTrace.split('-')[1]}</code> (the call that filed it; its execution links to it)
        </dd>
      )}
    </>
  );
}

/** The stored arguments in full, with the hash the decision carries. */
function ArgumentsCard({
  approval: a,
  rows,
  shownHash,
}: {
  approval: ApprovalRecord;
  rows: ArgumentRow[];
  shownHash: string;
}) {
  return (
    <section class="card" aria-labelledby="args">
      <h2 id="args">What will run</h2>
      <p class="hint">
        The arguments stored with this request, read when this page was made: the {a.server} server runs{' '}
        <code>{a.tool}</code> with exactly these, field by field and in full. The sentence above is the
        server&#39;s summary; these are the facts. Hidden characters are shown as{' '}
        <mark class="hidden">[U+…]</mark>, and letters of another script than the rest of their word are{' '}
        <mark class="mixed">
          <span class="odd">marked</span>
        </mark>
        .
      </p>
      {shownHash !== a.argumentsHash && (
        <p class="error" role="alert">
          The stored arguments do not match the hash recorded with the request: they were changed after it was
          made. Approving is refused; reject it and ask for a new request.
        </p>
      )}
      <ArgumentTable rows={rows} full caption={`The arguments of ${a.id}, as they will run`} />
      <p class="hint">
        Arguments hash <code>sha256:{shownHash}</code>: your decision carries it, and it is refused if the
        arguments change before it is recorded.
      </p>
    </section>
  );
}

/** The values the tool's effect will use, as read when the request was made: the approval fixes them. */
function ValuesCard({ approval: a, rows }: { approval: ApprovalRecord; rows: ArgumentRow[] }) {
  return (
    <section class="card" aria-labelledby="values">
      <h2 id="values">What its effect will use</h2>
      <p class="hint">
        Read when the request was made, besides the arguments: what the database or another system held then.
        The {a.server} server reads them again when it runs the action and refuses it if any differs, so an
        approval carries out exactly these.
      </p>
      <ArgumentTable rows={rows} full caption={`The values ${a.id} was filed with`} />
    </section>
  );
}

/** The decision form: a reason, Approve or Reject, the session's CSRF token and the shown arguments' hash. */
function DecideCard(props: {
  approval: ApprovalRecord;
  approver: Approver;
  shownHash: string;
  error?: string | undefined;
  reason?: string | undefined;
}) {
  return (
    <section class="card" aria-labelledby="decide">
      <h2 id="decide">Decide</h2>
      <form method="post" action={`/approvals/${props.approval.id}/decide`}>
        <input type="hidden" name="_csrf" value={props.approver.csrf ?? ''} />
        <input type="hidden" name="hash" value={props.shownHash} />
        <label for="reason">Reason</label>
        <p class="hint" id="reason-hint">
          Optional to approve, required to reject. The requester sees it; the audit log keeps it.
        </p>
        <textarea
          id="reason"
          name="reason"
          rows={3}
          maxlength={1000}
          aria-describedby={props.error ? 'reason-hint decision-error' : 'reason-hint'}
        >
          {props.reason ?? ''}
        </textarea>
        <div class="actions">
          <button class="approve" type="submit" name="decision" value="approve">
            Approve and run
          </button>
          <button class="reject" type="submit" name="decision" value="reject">
            Reject
          </button>
        </div>
      </form>
    </section>
  );
}

/** Every audit event that names the approval, and the deliveries of its notifications. */
function AuditTrailCard({ events, deliveries }: { events: ApprovalEvent[]; deliveries: ApprovalDelivery[] }) {
  return (
    <section class="card" aria-labelledby="trail">
      <h2 id="trail">Audit trail</h2>
      <table class="stack">
        <caption>Every audit event that names this approval, oldest first.</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Step</th>
            <th scope="col">Outcome</th>
            <th scope="col">By</th>
          </tr>
        </thead>
        <tbody>
          {events.map((e) => (
            <tr>
              <td data-label="When">{when(e.at)}</td>
              <td data-label="Step">
                <code>
                  <Shown text={e.method} />
                </code>
              </td>
              <td data-label="Outcome">{e.outcome}</td>
              <td data-label="By">
                <Shown text={e.tokenLabel ?? ''} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {deliveries.length > 0 && (
        <>
          <h2 class="later">Deliveries</h2>
          <ul>
            {deliveries.map((d) => (
              <li>
                <Shown text={d.kind} />: {d.status} after {d.attempts} attempt{d.attempts === 1 ? '' : 's'}
                {d.lastError && (
                  <>
                    {' (last error: '}
                    <Shown text={d.lastError} />)
                  </>
                )}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

/** One approval: everything a person needs to decide, the decision form while pending, the story after. */
export function DetailPage(props: {
  approver: Approver;
  pending: number;
  approval: ApprovalRecord;
  /** The stored arguments, field by field: what will run. */
  rows: ArgumentRow[];
  /** The hash of exactly the arguments shown; the decision carries it, and is refused if they changed. */
  shownHash: string;
  /** The values its effect will use (`approvedValues`), field by field; none for a tool without them. */
  valueRows: ArgumentRow[];
  events: ApprovalEvent[];
  deliveries: ApprovalDelivery[];
  /** Who has approved so far, when the company's policy asks more than one person. */
  votes: readonly Vote[];
  error?: string | undefined;
  reason?: string | undefined;
  decided?: boolean;
}) {
  const a = props.approval;
  const status = effectiveStatus(a);
  const previewFindings = findings(a.preview);
  const argFindings = argumentFindings([...props.rows, ...props.valueRows]);
  return (
    <Layout title={`Approval ${a.id}`} approver={props.approver} pending={props.pending}>
      <h1>
        Approval <code>{a.id}</code>
      </h1>
      {props.error && (
        <div class="error" role="alert" id="decision-error">
          <Shown text={props.error} />
        </div>
      )}
      {props.decided && !props.error && <DecidedNotice approval={a} status={status} votes={props.votes} />}
      <LookClosely of={mergeFindings([previewFindings, argFindings])} where="below, each with a note" />
      <ActionCard approval={a} status={status} previewFindings={previewFindings} votes={props.votes} />
      <ArgumentsCard approval={a} rows={props.rows} shownHash={props.shownHash} />
      {props.valueRows.length > 0 && <ValuesCard approval={a} rows={props.valueRows} />}
      {status === 'pending' && (
        <DecideCard
          approval={a}
          approver={props.approver}
          shownHash={props.shownHash}
          error={props.error}
          reason={props.reason}
        />
      )}
      <AuditTrailCard events={props.events} deliveries={props.deliveries} />
      <p>
        <a href="/">Back to the pending requests</a>
      </p>
    </Layout>
  );
}
