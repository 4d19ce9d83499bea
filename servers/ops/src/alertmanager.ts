import {
  compileModelPattern,
  ModelPatternError,
  ToolError,
  type ModelPattern,
  untrusted,
  type ToolContext,
  type UntrustedText,
  type UpstreamResponse,
} from '@bulkhead/core';
import { z } from 'zod';

// What the tools share about Alertmanager's API v2: the shapes it answers with (its Swagger document,
// api/v2/openapi.yaml of Alertmanager 0.25), matchers as the model gives them and as Alertmanager and
// a person read them, and the one way its answers are read.

/** The upstream's name in the manifest (`bulkhead.upstreams.alertmanager`). */
export const ALERTMANAGER = 'alertmanager';

/** An alert as `GET /api/v2/alerts` answers it (gettableAlert). */
export interface AmAlert {
  fingerprint: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  startsAt: string;
  endsAt: string;
  updatedAt: string;
  generatorURL?: string;
  receivers: { name: string }[];
  status: { state: 'unprocessed' | 'active' | 'suppressed'; silencedBy: string[]; inhibitedBy: string[] };
}

/** A group as `GET /api/v2/alerts/groups` answers it (alertGroup). */
export interface AmGroup {
  labels: Record<string, string>;
  receiver: { name: string };
  alerts: AmAlert[];
}

/** A matcher as Alertmanager stores it in a silence. */
export interface AmMatcher {
  name: string;
  value: string;
  isRegex: boolean;
  isEqual?: boolean;
}

/** A silence as `GET /api/v2/silences` answers it (gettableSilence). */
export interface AmSilence {
  id: string;
  status: { state: 'expired' | 'active' | 'pending' };
  updatedAt: string;
  matchers: AmMatcher[];
  startsAt: string;
  endsAt: string;
  createdBy: string;
  comment: string;
}

export const MATCH_OPS = ['=', '!=', '=~', '!~'] as const;
export type MatchOp = (typeof MATCH_OPS)[number];

const CONTROL = /[\p{Cc}]/u;

/** One label matcher, as the model gives it. */
export const matcherArg = z.strictObject({
  label: z
    .string()
    .regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, 'a label name: letters, digits, _')
    .refine((v) => v.length <= 100, 'at most 100 characters')
    .describe('Label name.'),
  op: z.enum(MATCH_OPS).describe('=~ and !~: the regex matches the whole value.'),
  value: z
    .string()
    .refine((v) => v.length <= 200, 'at most 200 characters')
    .refine((v) => !CONTROL.test(v), 'no control characters or line breaks')
    .describe('Value, or regex for =~ and !~.'),
});
export type Matcher = z.output<typeof matcherArg>;

/** `alertname="HighLatency"`: a matcher in Alertmanager's filter syntax, its value quoted as its parser reads it. */
export function filterString(matcher: Matcher): string {
  return `${matcher.label}${matcher.op}"${matcher.value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/** `alertname is "HighLatency"`: a matcher as a person reads it in a preview. */
export function matcherWords(matcher: Matcher): string {
  const verb = { '=': 'is', '!=': 'is not', '=~': 'matches the regex', '!~': 'does not match the regex' }[
    matcher.op
  ];
  return `${matcher.label} ${verb} ${JSON.stringify(matcher.value)}`;
}

/** Matchers in words, joined: `alertname is "X" and severity is "page"`. */
export function matchersInWords(matchers: readonly Matcher[]): string {
  return matchers.map(matcherWords).join(' and ');
}

/** A silence's stored matcher as the model gives one. */
export function fromAmMatcher(matcher: AmMatcher): Matcher {
  const equal = matcher.isEqual ?? true;
  return {
    label: matcher.name,
    op: matcher.isRegex ? (equal ? '=~' : '!~') : equal ? '=' : '!=',
    value: matcher.value,
  };
}

/** Alertmanager's form of a matcher, for a new silence. */
export function toAmMatcher(matcher: Matcher): AmMatcher {
  return {
    name: matcher.label,
    value: matcher.value,
    isRegex: matcher.op.endsWith('~'),
    isEqual: !matcher.op.startsWith('!'),
  };
}

/** The pattern of a regex matcher, compiled for RE2 (Alertmanager's own engine); refused as Alertmanager would. */
function pattern(matcher: Matcher): ModelPattern {
  try {
    return compileModelPattern(matcher.value);
  } catch (err) {
    if (!(err instanceof ModelPatternError)) throw err;
    throw new ToolError(
      `${matcherWords(matcher)}: ${err.reason} — fix the value or use op "=" for an exact value`,
    );
  }
}

/** Refuses a regex Alertmanager would refuse (RE2 syntax), or one too large to check. */
export function checkRegexes(matchers: readonly Matcher[]): void {
  for (const m of matchers) if (m.op.endsWith('~')) pattern(m);
}

/** A matcher as a test of one label value (a missing label is the empty value, as in Alertmanager). */
function matcherTest(matcher: Matcher): (value: string) => boolean {
  const equal = !matcher.op.startsWith('!');
  if (!matcher.op.endsWith('~')) return (value) => (value === matcher.value) === equal;
  const p = pattern(matcher);
  return (value) => p.matchesWhole(value) === equal;
}

/**
 * Label values of unrelated alerts: a matcher that matches every one of them names nothing in
 * particular, whatever else it refuses. Plain ASCII words only, since that is what alert names are: a
 * class that spans the printable range (`[ -~]+`, `\S+`, `[^é]+`, `[\w-]+`) matches them all and so
 * is no narrowing.
 */
const UNRELATED_VALUES = ['a', 'Z', '0', 'HighLatency', 'some-value_42'];

/**
 * Refuses matchers that would silence (nearly) everything: a silence needs one matcher that does not
 * match a missing label and does not match every unrelated value (`alertname =~ ".*"`, `!= ""`,
 * `=~ ".+"`, `=~ "[ -~]+"` all fail that). Regexes are matched with RE2, never V8's backtracking engine.
 */
export function checkNarrow(matchers: readonly Matcher[]): void {
  const tests = matchers.map(matcherTest);
  const narrow = tests.some((test) => !test('') && !UNRELATED_VALUES.every(test));
  if (!narrow)
    throw new ToolError(
      `${matchersInWords(matchers)} would match every alert: add a matcher that names what to silence, ` +
        'e.g. {"label": "alertname", "op": "=", "value": "HighLatency"}; nothing was filed',
    );
}

/** Alertmanager's `filter` query parameter: one matcher a value, the client repeating the key. */
export const filterQuery = (matchers: readonly Matcher[]) => ({ filter: matchers.map(filterString) });

/** An answer of Alertmanager's read whole as JSON; a refusal becomes an error the model can act on. */
export function answer<T>(res: UpstreamResponse, what: string): T {
  if (!res.ok) {
    // Its words are Alertmanager's, not ours: they reach the model as untrusted text after the sentence.
    const body = res.text();
    const why = body.text.replace(/\s+/g, ' ').trim().slice(0, 200);
    throw new ToolError(
      `Alertmanager refused ${what} (HTTP ${res.status}) — check the arguments; nothing was changed${why ? '. Its answer follows' : ''}`,
      why ? { quoted: { ...body, text: why } } : {},
    );
  }
  return res.json<T>();
}

/** Every alert Alertmanager holds now that the matchers select (silenced, inhibited and unprocessed included). */
export async function alertsMatching(ctx: ToolContext, matchers: readonly Matcher[]): Promise<AmAlert[]> {
  const res = await ctx.upstream(ALERTMANAGER).get('/api/v2/alerts', { query: filterQuery(matchers) });
  return sortAlerts(answer<AmAlert[]>(res, 'the alert query'));
}

/** Alerts in a stable order: by name, then by their other labels, then fingerprint. */
export function sortAlerts(alerts: AmAlert[]): AmAlert[] {
  const key = (alert: AmAlert) =>
    [
      alert.labels.alertname ?? '',
      ...Object.keys(alert.labels)
        .sort()
        .map((k) => `${k}=${alert.labels[k]}`),
    ].join('\u0000');
  return alerts.sort((a, b) => key(a).localeCompare(key(b)) || a.fingerprint.localeCompare(b.fingerprint));
}

/** `{alertname="HighLatency", severity="page"}`: a label set as untrusted text (alert sources set labels). */
export function labelText(labels: Record<string, string>, source: string): UntrustedText {
  const pairs = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return untrusted(`{${pairs.join(', ')}}`, { source });
}

/** Annotations as untrusted text, one `name: value` a line. */
export function annotationText(annotations: Record<string, string>, source: string): UntrustedText {
  const lines = Object.keys(annotations)
    .sort()
    .map((k) => `${k}: ${annotations[k]}`);
  return untrusted(lines.join('\n'), { source });
}

/** The state the model reads: `active` (notifying), `silenced`, `inhibited` or `unprocessed`. */
export function alertState(alert: AmAlert): 'active' | 'silenced' | 'inhibited' | 'unprocessed' {
  if (alert.status.state !== 'suppressed') return alert.status.state;
  return alert.status.silencedBy.length ? 'silenced' : 'inhibited';
}

/** A silence's id: Alertmanager's UUIDs. */
export const silenceIdArg = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'a silence id, a UUID');

/** An alert's fingerprint: 16 hex digits. */
export const fingerprintArg = z.string().regex(/^[0-9a-f]{16}$/, 'a fingerprint: 16 hex digits');

/** `2026-12-03 14:20 UTC`: a time as the person approving reads it. */
export function when(iso: string | Date): string {
  return `${new Date(iso).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
