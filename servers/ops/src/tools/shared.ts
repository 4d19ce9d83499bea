import { svgIcon, type ToolContext } from '@bulkhead/core';

const BELL = 'M8 1a4 4 0 0 0-4 4v4l-2 3h12l-2-3V5a4 4 0 0 0-4-4zm-2 12a2 2 0 0 0 4 0z';

/** One icon per kind of object or action; the bell is also the server's. */
export const icons = {
  alert: svgIcon(`<path d='${BELL}'/>`),
  alerts: svgIcon(
    `<path d='${BELL}' transform='scale(.6)'/><path d='M11 3h5v2h-5zm0 4h5v2h-5zm-9 6h14v2H2z'/>`,
  ),
  silences: svgIcon(`<path d='${BELL}'/><path d='M1 1l14 14' stroke='#fff' stroke-width='2'/>`),
  silence: svgIcon(`<path d='${BELL}'/><path d='M0 16L16 0' stroke='#c00' stroke-width='2'/>`),
  expire: svgIcon(
    "<circle cx='8' cy='8' r='7' fill='none' stroke='#000' stroke-width='2'/><path d='M8 3v5l3 3' fill='none' stroke='#000' stroke-width='2'/>",
  ),
};

/** The sentence every gated tool's description holds. */
export const GATED = 'Returns pending_approval (gated).';

/** Who asked, as the approver reads it: the token's label and id. */
export function requester(ctx: ToolContext): string {
  return `${JSON.stringify(ctx.access.label)} (token ${ctx.access.tokenId})`;
}
