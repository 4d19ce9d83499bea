import { z } from 'zod';
import { untrustedTextSchema } from '../text-safety/untrusted/wrap.ts';

/**
 * What a gated tool returns when called: the call never acts, it files a
 * request. So this, not the tool's own `output`, is the output schema its
 * listing advertises; the tool's own result comes later from get_approval_status.
 * `preview` is untrusted: it quotes ticket subjects, names and old contact values.
 * The call pipeline holds the requester's answer to it, so it lives here, below the approvals that fill it.
 */
export const pendingApprovalOutput = z.object({
  status: z
    .enum(['pending_approval', 'approved'])
    .describe(
      "pending_approval: nothing has happened yet. approved: the company's policy let it run without a person; it runs in a moment.",
    ),
  approval_id: z.string().describe('Pass to get_approval_status to learn the decision and the result.'),
  preview: untrustedTextSchema.describe('The action a person is asked to approve (quotes customer text).'),
  expires_at: z.string().describe('ISO time after which an undecided request lapses and never runs.'),
  note: z.string(),
});

export type PendingApprovalResult = z.output<typeof pendingApprovalOutput>;

/** The sentence the model reads; without it, models tend to report the action as done. */
export const PENDING_NOTE =
  'Nothing has been sent or changed yet. A person must approve this first; ask get_approval_status with this approval_id later to learn the decision and the result.';

/** The note when more than one person must approve (four eyes). */
export function pendingNote(approvals: number): string {
  if (approvals <= 1) return PENDING_NOTE;
  return `Nothing has been sent or changed yet. ${approvals} different people must approve this first; ask get_approval_status with this approval_id later to learn the decision and the result.`;
}

/** The note when the company's policy let a gated call run without a person. */
export const RUNS_BY_POLICY_NOTE =
  "The company's policy lets this run without a person: it runs in a moment, exactly once. Ask get_approval_status with this approval_id to learn the result; do not call again.";

/** The `source` of a preview when the model reads it as untrusted text. */
export function previewSource(id: string): string {
  return `approval ${id} preview`;
}
