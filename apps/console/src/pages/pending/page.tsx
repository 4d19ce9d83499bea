/** @jsxImportSource hono/jsx */
import type { ApprovalRecord } from '@bulkhead/core/operator';
import { LookClosely, ToolOn } from '../../layout/approval-parts.tsx';
import { Layout } from '../../layout/layout.tsx';
import { ago } from '../../layout/time.ts';
import type { Approver } from '../../sessions.ts';
import { ArgumentTable, Shown, type ArgumentRow, type TextFindings } from '../../visible-text.tsx';

function until(d: Date, now = new Date()): string {
  const s = Math.round((d.getTime() - now.getTime()) / 1000);
  if (s <= 0) return 'lapsed';
  if (s < 3600) return `in ${Math.max(1, Math.round(s / 60))} min`;
  if (s < 86400) return `in ${Math.round(s / 3600)} h`;
  return `in ${Math.round(s / 86400)} d`;
}

/** Every request waiting for a decision, oldest first: what it does, with what, who asked, how long ago. */
export function PendingPage(props: {
  approver: Approver;
  approvals: { approval: ApprovalRecord; rows: ArgumentRow[]; findings: TextFindings }[];
  truncated: boolean;
}) {
  return (
    <Layout title="Pending" approver={props.approver} pending={props.approvals.length} current="pending">
      <h1>Waiting for approval</h1>
      {props.approvals.length === 0 ? (
        <p>Nothing waits for approval.</p>
      ) : (
        <p class="hint">Oldest first: the first one expires soonest. Nothing here has happened yet.</p>
      )}
      {props.approvals.map(({ approval: a, rows, findings: found }) => (
        <article class="card" aria-labelledby={`p-${a.id}`}>
          <h2 id={`p-${a.id}`}>
            <a href={`/approvals/${a.id}`}>
              <Shown text={a.preview} />
            </a>
          </h2>
          <LookClosely of={found} where="in it; the detail page explains each mark" />
          <dl class="meta">
            <ToolOn approval={a} />
            <dt>Requested by</dt>
            <dd>
              <Shown text={a.requestedByLabel ?? 'unknown'} />
            </dd>
            <dt>Age</dt>
            <dd>
              <time datetime={a.requestedAt.toISOString()}>{ago(a.requestedAt)}</time> (expires{' '}
              {until(a.expiresAt)})
            </dd>
          </dl>
          <ArgumentTable rows={rows} full={false} caption="Arguments (long texts cut here)" />
          <a class="button primary" href={`/approvals/${a.id}`} aria-label={`Review and decide ${a.id}`}>
            Review and decide
          </a>
        </article>
      ))}
      {props.truncated && <p>More are waiting than fit on this page; decide these first.</p>}
    </Layout>
  );
}
