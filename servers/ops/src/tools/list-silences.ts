import { defineTool, limitArg, untrusted, untrustedTextRef, READ_ONLY } from '@bulkhead/core';
import { z } from 'zod';
import { ALERTMANAGER, answer, fromAmMatcher, matchersInWords, type AmSilence } from '../alertmanager.ts';
import { icons } from './shared.ts';

const STATES = ['active', 'pending', 'expired'] as const;
const ORDER = { active: 0, pending: 1, expired: 2 };

export const listSilences = defineTool({
  name: 'list_silences',
  title: 'List silences',
  description:
    'Silences in Alertmanager in the given states, active first, then pending (not yet started), then expired; each by end time; limit. ' +
    'Returns silences (id, state, matchers, starts_at, ends_at, created_by, comment), count, total, truncated.',
  scope: 'ops:read',
  input: z.strictObject({
    states: z
      .array(z.enum(STATES))
      .min(1)
      .default(['active', 'pending'])
      .describe('Default active and pending.'),
    limit: limitArg(20, 100),
  }),
  output: z.object({
    silences: z.array(
      z.object({
        id: z.string(),
        state: z.enum(STATES),
        matchers: untrustedTextRef,
        starts_at: z.string(),
        ends_at: z.string(),
        created_by: untrustedTextRef,
        comment: untrustedTextRef,
      }),
    ),
    count: z.number(),
    total: z.number(),
    truncated: z.boolean(),
  }),
  annotations: { ...READ_ONLY, openWorldHint: true },
  icons: icons.silences,
  timeoutMs: 10_000,
  handler: async ({ states, limit }, ctx) => {
    const all = answer<AmSilence[]>(
      await ctx.upstream(ALERTMANAGER).get('/api/v2/silences'),
      'the silence query',
    )
      .filter((s) => states.includes(s.status.state))
      .sort(
        (a, b) =>
          ORDER[a.status.state] - ORDER[b.status.state] ||
          a.endsAt.localeCompare(b.endsAt) ||
          a.id.localeCompare(b.id),
      );
    const silences = all.slice(0, limit).map((s) => ({
      id: s.id,
      state: s.status.state,
      // Whoever made the silence chose its matcher values, as they chose its comment.
      matchers: untrusted(matchersInWords(s.matchers.map(fromAmMatcher)), {
        source: `silence ${s.id} matchers`,
      }),
      starts_at: s.startsAt,
      ends_at: s.endsAt,
      created_by: untrusted(s.createdBy, { source: `silence ${s.id} creator` }),
      comment: untrusted(s.comment, { source: `silence ${s.id} comment` }),
    }));
    return { silences, count: silences.length, total: all.length, truncated: silences.length < all.length };
  },
});
