import { defineTool, mentionsOutboxKey, quoted, textArg, ToolError, upstreamEffect } from '@bulkhead/core';
import { z } from 'zod';
import {
  ALERTMANAGER,
  alertsMatching,
  checkNarrow,
  fromAmMatcher,
  matcherArg,
  matchersInWords,
  toAmMatcher,
  when,
  type Matcher,
} from '../alertmanager.ts';
import { GATED, icons, requester } from './shared.ts';

/** The longest silence this tool makes: a longer one is a decision for Alertmanager's own UI. */
const MAX_MINUTES = 24 * 60;
/** Alerts named in a preview; the rest are counted. */
const PREVIEW_ALERTS = 10;

const DURATION = /^(?:(\d{1,4})d)?(?:(\d{1,5})h)?(?:(\d{1,6})m)?$/;

// The delivery appends its random key to the comment and, before a retry, looks for a silence with
// exactly that comment: a text the model writes that carries a key (or the `{key}` a key is filled
// into) is refused, so that nothing but the delivery writes one.
const NO_KEY_COMMENT =
  'text without "bulkhead-outbox-" or "{key}" (Bulkhead appends its own delivery key to the comment)';
const NO_KEY_VALUES =
  'values without "bulkhead-outbox-" or "{key}" (Bulkhead reserves them for its delivery keys)';

/** `1h30m` → 90; `undefined` when it is not a duration. */
function minutes(text: string): number | undefined {
  const m = DURATION.exec(text);
  if (!m || text === '') return undefined;
  const total = Number(m[1] ?? 0) * 1440 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
  return total > 0 ? total : undefined;
}

/** The silence's length in minutes, within the tool's limit; otherwise an error saying so. */
function checkedMinutes(duration: string): number {
  const total = minutes(duration)!;
  if (total > MAX_MINUTES)
    throw new ToolError(
      `duration ${duration} is longer than 24h, the longest silence this tool creates — ask for 24h or less (and again later if needed); nothing was filed`,
    );
  return total;
}

/** `2h`, `1h30m`, `45m`: the length as the approver reads it. */
function lengthText(total: number): string {
  const h = Math.floor(total / 60);
  const m = total % 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}`;
}

/** The matched alerts in a sentence: `2 alerts match now: HighLatency (fp …), …`. */
async function matchedNow(ctx: Parameters<typeof alertsMatching>[0], matchers: readonly Matcher[]) {
  const alerts = await alertsMatching(ctx, matchers);
  if (!alerts.length) return 'No alert matches now.';
  const named = alerts
    .slice(0, PREVIEW_ALERTS)
    // Alert sources set labels: a name is quoted, so that it cannot read as the sentence's own words.
    .map((a) => {
      const name = a.labels.alertname;
      return `${name === undefined ? '(no alertname)' : quoted(name, 100)} (${a.fingerprint}, ${a.status.state})`;
    });
  const more = alerts.length > PREVIEW_ALERTS ? `, and ${alerts.length - PREVIEW_ALERTS} more` : '';
  return `${alerts.length} alert${alerts.length === 1 ? ' matches' : 's match'} now: ${named.join(', ')}${more}.`;
}

export const createSilence = defineTool({
  name: 'create_silence',
  title: 'Create silence',
  description:
    `Silences the alerts the matchers select (all must hold) for duration from approval, at most 24h; comment says why. ${GATED} ` +
    'Once approved, list_silences shows it; expire_silence ends it.',
  scope: 'ops:silence',
  input: z.strictObject({
    matchers: z
      .array(matcherArg)
      .min(1)
      .max(10)
      .refine((ms) => !ms.some((m) => mentionsOutboxKey(m.value)), NO_KEY_VALUES)
      .describe('e.g. [{"label":"alertname","op":"=","value":"HighLatency"}].'),
    duration: z
      .string()
      .refine((v) => minutes(v) !== undefined, 'a duration like 2h, 30m or 1h30m')
      .describe('e.g. 2h, 30m, 1h30m.'),
    comment: textArg(3, 500)
      .refine((c) => !mentionsOutboxKey(c), NO_KEY_COMMENT)
      .describe('Why; shown in Alertmanager.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  icons: icons.silence,
  timeoutMs: 10_000,
  // What the company's policy weighs: the length in minutes (a rule on long silences at night).
  policyFacts: { types: { minutes: 'Long' }, of: ({ duration }) => ({ minutes: minutes(duration)! }) },
  approval: {
    // The silence as Alertmanager will get it; only its start is the moment it runs.
    values: ({ matchers, duration, comment }) => {
      checkNarrow(matchers);
      return { matchers: matchers.map(toAmMatcher), minutes: checkedMinutes(duration), comment };
    },
    preview: async ({ matchers }, ctx, v) => {
      const now = new Date();
      return (
        `Silence in Alertmanager, for ${lengthText(v.minutes)} from approval (approved now: ${when(now)} to ` +
        `${when(new Date(now.getTime() + v.minutes * 60_000))}), every alert where ${matchersInWords(v.matchers.map(fromAmMatcher))}. ` +
        `Comment: ${quoted(v.comment)}. Asked by ${requester(ctx)}. ${await matchedNow(ctx, matchers)}`
      );
    },
  },
  handler: async (_args, ctx) => {
    // Read again by the kit just now and found as approved: the silence is made of these.
    const v = ctx.approval!.values;
    const { comment } = v;
    const startsAt = new Date();
    const endsAt = new Date(startsAt.getTime() + v.minutes * 60_000);
    // Alertmanager takes no Idempotency-Key and no id of ours: the outbox row's random key goes into
    // the comment ({key} is filled in at delivery). Before a retry, only a silence with exactly this
    // creator, this comment with this key, and these matchers counts as made by the first attempt.
    const silence = {
      matchers: v.matchers,
      createdBy: `${ctx.access.label} (approved by ${ctx.approval?.decidedBy ?? 'unknown'}, via bulkhead)`,
      comment: `${comment} [{key}]`,
    };
    const outboxId = await ctx.outbox!.enqueue(
      'upstream',
      upstreamEffect({
        upstream: ALERTMANAGER,
        method: 'POST',
        path: '/api/v2/silences',
        json: { ...silence, startsAt: startsAt.toISOString(), endsAt: endsAt.toISOString() },
        check: { path: '/api/v2/silences', match: silence },
      }),
    );
    return {
      queued: true,
      outbox_id: outboxId,
      matchers: matchersInWords(v.matchers.map(fromAmMatcher)),
      starts_at: startsAt.toISOString(),
      ends_at: endsAt.toISOString(),
    };
  },
});
