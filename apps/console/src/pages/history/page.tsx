/** @jsxImportSource hono/jsx */
import type { ApprovalRecord } from '@bulkhead/core/operator';
import { APPROVAL_STATUSES, effectiveStatus, visible } from '@bulkhead/core/operator';
import { Badge } from '../../layout/approval-parts.tsx';
import { Layout } from '../../layout/layout.tsx';
import { when } from '../../layout/time.ts';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';

function Select(props: { id: string; label: string; value: string | undefined; options: readonly string[] }) {
  return (
    <div>
      <label for={props.id}>{props.label}</label>
      <select id={props.id} name={props.id}>
        <option value="" selected={!props.value}>
          Any
        </option>
        {props.options.map((o) => (
          <option value={o} selected={props.value === o}>
            {visible(o)}
          </option>
        ))}
      </select>
    </div>
  );
}

/** Every request with its outcome, filtered by status, server and tool. */
export function HistoryPage(props: {
  approver: Approver;
  pending: number;
  approvals: ApprovalRecord[];
  truncated: boolean;
  filter: { status?: string | undefined; server?: string | undefined; tool?: string | undefined };
  servers: string[];
  tools: string[];
}) {
  return (
    <Layout title="History" approver={props.approver} pending={props.pending} current="history">
      <h1>History</h1>
      <form method="get" action="/history" class="filters" aria-label="Filter the history">
        <Select id="status" label="Status" value={props.filter.status} options={APPROVAL_STATUSES} />
        <Select id="server" label="Server" value={props.filter.server} options={props.servers} />
        <Select id="tool" label="Tool" value={props.filter.tool} options={props.tools} />
        <div>
          <button class="secondary" type="submit">
            Filter
          </button>
        </div>
      </form>
      {props.approvals.length === 0 ? (
        <p>No requests match.</p>
      ) : (
        <table class="stack">
          <caption>
            {props.truncated
              ? `The ${props.approvals.length} newest matching requests; narrow the filter to see older ones.`
              : `${props.approvals.length} matching request${props.approvals.length === 1 ? '' : 's'}, newest first.`}
          </caption>
          <thead>
            <tr>
              <th scope="col">Requested</th>
              <th scope="col">Action</th>
              <th scope="col">Tool</th>
              <th scope="col">Status</th>
              <th scope="col">Decided by</th>
            </tr>
          </thead>
          <tbody>
            {props.approvals.map((a) => (
              <tr>
                <td data-label="Requested">{when(a.requestedAt)}</td>
                <td data-label="Action">
                  <a href={`/approvals/${a.id}`}>
                    <Shown text={a.preview} />
                  </a>
                </td>
                <td data-label="Tool">
                  <code>
                    <Shown text={a.tool} />
                  </code>{' '}
                  on <Shown text={a.server} />
                </td>
                <td data-label="Status">
                  <Badge status={effectiveStatus(a)} />
                </td>
                <td data-label="Decided by">
                  <Shown text={a.decidedBy ?? '—'} />
                  {a.decisionReason && (
                    <>
                      {': “'}
                      <Shown text={a.decisionReason} />
                      {'”'}
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Layout>
  );
}
