import { defineTool, quoted, ToolError, upstreamEffect, type ToolContext } from '@bulkhead/core';
import { z } from 'zod';
import {
  ALERTMANAGER,
  answer,
  fromAmMatcher,
  matchersInWords,
  silenceIdArg,
  when,
  type AmSilence,
} from '../alertmanager.ts';
import { GATED, icons, requester } from './shared.ts';

/** The silence as Alertmanager has it now; an error the model can act on when it is gone or over. */
async function liveSilence(ctx: ToolContext, id: string): Promise<AmSilence> {
  const res = await ctx.upstream(ALERTMANAGER).get('/api/v2/silence/{id}', { params: { id } });
  if (res.status === 404)
    throw new ToolError(`no silence ${id} in Alertmanager — list_silences lists them with their ids`);
  const silence = answer<AmSilence>(res, 'the silence query');
  if (silence.status.state === 'expired')
    throw new ToolError(`silence ${id} has already ended (${when(silence.endsAt)}); nothing to expire`);
  return silence;
}

export const expireSilence = defineTool({
  name: 'expire_silence',
  title: 'Expire silence',
  description: `Ends silence silence_id (from list_silences) now, so its alerts notify again. ${GATED}`,
  scope: 'ops:silence',
  input: z.strictObject({ silence_id: silenceIdArg.describe('A UUID.') }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  icons: icons.expire,
  timeoutMs: 10_000,
  approval: {
    // The one value its effect uses. Alertmanager never changes a silence's matchers under its id (a
    // change makes a new silence), so what the preview shows of it holds for the id; reading it again
    // at the run would only make an approved expiry fail while Alertmanager is down.
    values: ({ silence_id }) => ({ silence: silence_id }),
    preview: async (_args, ctx, v) => {
      const s = await liveSilence(ctx, v.silence);
      return (
        `Expire silence ${quoted(s.id)} in Alertmanager now (${s.status.state}, it would end ${when(s.endsAt)}): ` +
        `it silences every alert where ${matchersInWords(s.matchers.map(fromAmMatcher))}. ` +
        `Created by ${quoted(s.createdBy)}, comment ${quoted(s.comment)}. Asked by ${requester(ctx)}.`
      );
    },
  },
  handler: async (_args, ctx) => {
    const silence_id = ctx.approval!.values.silence;
    // Expiring twice is refused by Alertmanager: before a retry the deliverer looks whether it is over.
    const outboxId = await ctx.outbox!.enqueue(
      'upstream',
      upstreamEffect({
        upstream: ALERTMANAGER,
        method: 'DELETE',
        path: '/api/v2/silence/{id}',
        params: { id: silence_id },
        check: {
          path: '/api/v2/silence/{id}',
          params: { id: silence_id },
          match: { id: silence_id, status: { state: 'expired' } },
        },
      }),
    );
    return { queued: true, outbox_id: outboxId, silence_id };
  },
});
