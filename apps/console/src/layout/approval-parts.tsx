/** @jsxImportSource hono/jsx */
import type { ApprovalRecord, ApprovalStatus } from '@bulkhead/core/operator';
import { anyFindings, Shown, type TextFindings } from '../visible-text.tsx';

/** An approval's status as the pages say it. */
export const STATUS_WORDS: Record<ApprovalStatus, string> = {
  pending: 'Waiting for a decision',
  approved: 'Approved, about to run',
  executed: 'Approved and executed',
  rejected: 'Rejected',
  expired: 'Expired undecided',
  failed: 'Approved, but failed',
  withdrawn: 'Withdrawn by the requester',
};

/** The "Tool" entry of an approval's list of facts: the tool, on its server. */
export function ToolOn({ approval: a }: { approval: ApprovalRecord }) {
  return (
    <>
      <dt>Tool</dt>
      <dd>
        <code>
          <Shown text={a.tool} />
        </code>{' '}
        on <Shown text={a.server} />
      </dd>
    </>
  );
}

/** An approval's status as a badge, in the words of STATUS_WORDS. */
export function Badge({ status }: { status: ApprovalStatus }) {
  return <span class={`badge ${status}`}>{STATUS_WORDS[status]}</span>;
}

/** The warning above a request that holds hidden characters or mixed-script words. */
export function LookClosely({ of, where }: { of: TextFindings; where: string }) {
  if (!anyFindings(of)) return null;
  const parts = [
    of.hidden.size
      ? `${[...of.hidden.values()].reduce((a, b) => a + b, 0)} hidden character${[...of.hidden.values()].reduce((a, b) => a + b, 0) === 1 ? '' : 's'}`
      : '',
    of.mixed.length ? `${of.mixed.length} word${of.mixed.length === 1 ? '' : 's'} mixing scripts` : '',
  ].filter(Boolean);
  return (
    <div class="warn" role="note">
      <p>
        Look closely: this request holds {parts.join(' and ')}, marked {where}. What you read may not be what
        will run.
      </p>
    </div>
  );
}
