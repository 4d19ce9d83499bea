/** @jsxImportSource hono/jsx */
import { OUTCOMES, type AuditEvent } from '@bulkhead/audit';
import { Layout } from '../../layout/layout.tsx';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';
import { localTime, searchQuery, TEXT_FILTERS, type AuditSearch } from './search.ts';

/** `2026-12-04 10:03:27 UTC`: an audit log is read to the second. */
export function stamp(d: Date): string {
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

function SearchForm({ search }: { search: AuditSearch }) {
  return (
    <form method="get" action="/operator/audit" class="filters" aria-label="Search the audit log">
      <div>
        <label for="from">From (UTC)</label>
        <input id="from" name="from" type="datetime-local" step="1" value={localTime(search.from)} />
      </div>
      <div>
        <label for="to">To (UTC, not included)</label>
        <input
          id="to"
          name="to"
          type="datetime-local"
          step="1"
          value={search.to ? localTime(search.to) : ''}
        />
      </div>
      <div>
        <label for="outcome">Outcome</label>
        <select id="outcome" name="outcome">
          <option value="" selected={!search.outcome}>
            Any
          </option>
          {OUTCOMES.map((o) => (
            <option value={o} selected={search.outcome === o}>
              {o}
            </option>
          ))}
        </select>
      </div>
      {Object.entries(TEXT_FILTERS).map(([name, label]) => (
        <div>
          <label for={name}>{label}</label>
          <input
            id={name}
            name={name}
            type="text"
            maxlength={200}
            spellcheck={false}
            value={search[name as keyof typeof TEXT_FILTERS] ?? ''}
          />
        </div>
      ))}
      <div>
        <button class="secondary" type="submit">
          Search
        </button>
      </div>
    </form>
  );
}

function EventRows({ events }: { events: AuditEvent[] }) {
  return (
    <tbody>
      {events.map((e) => (
        <tr>
          <td data-label="Time">
            <time datetime={e.at.toISOString()}>{stamp(e.at)}</time>
          </td>
          <td data-label="Event">
            <a href={`/operator/audit/events/${e.seq}`}>#{e.seq}</a>
          </td>
          <td data-label="Server">
            <Shown text={e.server} />
          </td>
          <td data-label="Tool or method">
            <code>
              <Shown text={e.tool ?? e.method} />
            </code>
          </td>
          <td data-label="Outcome">
            <Shown text={e.outcome} />
          </td>
          <td data-label="Duration">{e.durationMs} ms</td>
          <td data-label="Token">
            <Shown text={e.tokenLabel ?? '—'} />
          </td>
        </tr>
      ))}
    </tbody>
  );
}

/**
 * The audit log, searched: the form, links that export what it finds, and a page of matching events,
 * newest first, with a link to the next older page.
 */
export function AuditLogPage(props: {
  approver: Approver;
  pending: number;
  search: AuditSearch;
  errors: string[];
  events: AuditEvent[];
  /** The number the next older page starts below; none when this page holds the oldest match. */
  older: number | undefined;
}) {
  const { search } = props;
  const range = `from ${stamp(search.from)} ${search.to ? `to ${stamp(search.to)}` : 'to now'}`;
  return (
    <Layout title="Audit log" approver={props.approver} pending={props.pending} current="audit">
      <h1>Audit log</h1>
      {props.errors.length > 0 && (
        <div class="error" role="alert">
          {props.errors.map((e) => (
            <p>
              <Shown text={e} />
            </p>
          ))}
        </div>
      )}
      <SearchForm search={search} />
      <p class="actions">
        <a
          class="button secondary"
          href={`/operator/audit/export?${searchQuery(search, { format: 'jsonl' })}`}
        >
          Export JSON Lines
        </a>
        <a class="button secondary" href={`/operator/audit/export?${searchQuery(search, { format: 'csv' })}`}>
          Export CSV
        </a>
      </p>
      <p class="hint">
        An export holds every matching event {range}, oldest first, in the format of{' '}
        <code>bulkhead audit export</code>, and is itself recorded in the log.
      </p>
      {props.errors.length > 0 ? null : props.events.length === 0 ? (
        <p>No events match {range}.</p>
      ) : (
        <table class="stack">
          <caption>
            Events {range}
            {search.before !== undefined ? `, older than #${search.before}` : ''}, newest first.
          </caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Event</th>
              <th scope="col">Server</th>
              <th scope="col">Tool or method</th>
              <th scope="col">Outcome</th>
              <th scope="col">Duration</th>
              <th scope="col">Token</th>
            </tr>
          </thead>
          <EventRows events={props.events} />
        </table>
      )}
      <p class="actions">
        {search.before !== undefined && <a href={`/operator/audit?${searchQuery(search)}`}>Newest</a>}
        {props.older !== undefined && (
          <a href={`/operator/audit?${searchQuery(search, { before: String(props.older) })}`} rel="next">
            Older
          </a>
        )}
      </p>
    </Layout>
  );
}
