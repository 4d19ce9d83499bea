import { OUTCOMES, type AuditFilter, type Outcome } from '@bulkhead/audit';
import type { TransactionSql } from '../../operator/read.ts';

/** A search of the audit log as the form and its links carry it. */
export interface AuditSearch {
  from: Date;
  /** Exclusive end; none: up to now. */
  to?: Date | undefined;
  server?: string | undefined;
  tool?: string | undefined;
  outcome?: Outcome | undefined;
  token?: string | undefined;
  /** A person's events: their tokens' events and the console's events that name them. */
  person?: string | undefined;
  approval?: string | undefined;
  trace?: string | undefined;
  /** Paging back: only events numbered below this. */
  before?: number | undefined;
}

/** The text filters, by query parameter, with their label for error messages. */
export const TEXT_FILTERS = {
  server: 'Server',
  tool: 'Tool',
  token: 'Token id',
  person: 'Person',
  approval: 'Approval id',
  trace: 'Trace id',
} as const;
type TextFilter = keyof typeof TEXT_FILTERS;

const MAX_TEXT = 200;
const DAY_MS = 86_400_000;
/** `2026-12-04T10:00` as a datetime-local field sends it (seconds optional): a time in UTC. */
const LOCAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/;
/** ISO 8601 with a zone, or a date alone (its start, in UTC). */
const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/;

function parseTime(text: string): Date | undefined {
  const date = LOCAL.test(text)
    ? new Date(`${text}Z`)
    : ISO.test(text)
      ? new Date(text.length === 10 ? `${text}T00:00:00Z` : text)
      : undefined;
  return date && !Number.isNaN(date.getTime()) ? date : undefined;
}

/** A time as the form's datetime-local field shows it: UTC, to the second. */
export function localTime(d: Date): string {
  return d.toISOString().slice(0, 19);
}

/**
 * Reads a search from the query: from/to as datetime-local (taken as UTC) or ISO 8601 (from defaults to
 * 24 h before `now`), the text filters trimmed, the outcome one of {@link OUTCOMES}, before a number.
 * Each value that is not one of these is named in `errors`.
 */
export function parseSearch(
  query: Record<string, string | undefined>,
  now = new Date(),
): { search: AuditSearch; errors: string[] } {
  const errors: string[] = [];
  const time = (name: 'from' | 'to', label: string) => {
    const text = query[name]?.trim();
    if (!text) return undefined;
    const date = parseTime(text);
    if (!date)
      errors.push(`${label}: “${text}” is not a time (2026-12-04T10:00 in UTC, or ISO 8601 with a zone).`);
    return date;
  };
  const text = (name: TextFilter) => {
    const value = query[name]?.trim();
    if (!value) return undefined;
    if ([...value].length > MAX_TEXT) {
      errors.push(`${TEXT_FILTERS[name]}: longer than ${MAX_TEXT} characters.`);
      return undefined;
    }
    return value;
  };
  const outcomeText = query.outcome?.trim();
  const outcome = OUTCOMES.find((o) => o === outcomeText);
  if (outcomeText && !outcome) errors.push(`Outcome: “${outcomeText}” is not an outcome.`);
  const beforeText = query.before?.trim();
  const before = beforeText && /^[1-9]\d{0,14}$/.test(beforeText) ? Number(beforeText) : undefined;
  if (beforeText && before === undefined) errors.push(`Older than: “${beforeText}” is not an event number.`);
  const search: AuditSearch = {
    from: time('from', 'From') ?? new Date(Math.floor((now.getTime() - DAY_MS) / 1000) * 1000),
    to: time('to', 'To'),
    server: text('server'),
    tool: text('tool'),
    outcome,
    token: text('token'),
    person: text('person'),
    approval: text('approval'),
    trace: text('trace'),
    before,
  };
  return { search, errors };
}

/** The search as a query string (without the page's `before` unless given), for links that keep it. */
export function searchQuery(search: AuditSearch, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams({ from: search.from.toISOString() });
  if (search.to) params.set('to', search.to.toISOString());
  if (search.outcome) params.set('outcome', search.outcome);
  for (const name of Object.keys(TEXT_FILTERS) as TextFilter[]) {
    const value = search[name];
    if (value) params.set(name, value);
  }
  for (const [k, v] of Object.entries(extra)) params.set(k, v);
  return params.toString();
}

/**
 * The search as a filter of the log, read as `operator`: a person's tokens are those whose owner is the
 * person, compared as separation of duties compares people.
 */
export async function searchFilter(
  tx: TransactionSql,
  operator: string,
  search: AuditSearch,
): Promise<AuditFilter> {
  const tokenIds = search.person
    ? (
        await tx<{ id: string }[]>`
          select id from bulkhead_operator_tokens(${operator})
          where owner is not null and bulkhead_same_person(owner, ${search.person})`
      ).map((r) => r.id)
    : [];
  return {
    since: search.from,
    ...(search.to ? { until: search.to } : {}),
    ...(search.server ? { server: search.server } : {}),
    ...(search.tool ? { tool: search.tool } : {}),
    ...(search.outcome ? { outcome: search.outcome } : {}),
    ...(search.token ? { tokenId: search.token } : {}),
    ...(search.approval ? { approvalId: search.approval } : {}),
    ...(search.trace ? { traceId: search.trace } : {}),
    ...(search.person ? { person: { name: search.person, tokenIds } } : {}),
    ...(search.before !== undefined ? { beforeSeq: search.before } : {}),
  };
}
