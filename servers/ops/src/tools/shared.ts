import type { ToolContext } from '@bulkhead/core';

/** The sentence every gated tool's description holds. */
export const GATED = 'Returns pending_approval (gated).';

/** Who asked, as the approver reads it: the token's label and id. */
export function requester(ctx: ToolContext): string {
  return `${JSON.stringify(ctx.access.label)} (token ${ctx.access.tokenId})`;
}
