/** @jsxImportSource hono/jsx */
import { APPROVAL_STATUSES } from '@bulkhead/core/operator';
import type { Child } from 'hono/jsx';
import { STATUS_WORDS } from '../../layout/approval-parts.tsx';
import { Layout } from '../../layout/layout.tsx';
import { when } from '../../layout/time.ts';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';
import { DECISION_BINS, TOP_TOOLS, type ChartData } from './data.ts';
import { bucketStarts, type Bucket, type ChartRange, type RangeFields } from './range.ts';
import { BarChart, colour, ColumnChart, counted, Swatch, type Unit } from './svg.tsx';

const CALLS: Unit = { one: 'call', many: 'calls' };
const EVENTS: Unit = { one: 'event', many: 'events' };
const REQUESTS: Unit = { one: 'request', many: 'requests' };

/** `3 min 20 s`, `1 h 16 min`: a span to the second under an hour, to the minute under a day. */
export function duration(seconds: number): string {
  const s = Math.round(seconds);
  const [d, h, m] = [Math.floor(s / 86_400), Math.floor((s % 86_400) / 3_600), Math.floor((s % 3_600) / 60)];
  const parts =
    s < 60
      ? [`${s} s`]
      : s < 3_600
        ? [`${m} min`, s % 60 ? `${s % 60} s` : '']
        : s < 86_400
          ? [`${h} h`, m ? `${m} min` : '']
          : [`${d} d`, h ? `${h} h` : ''];
  return parts.filter(Boolean).join(' ');
}

function bucketTitle(start: Date, bucket: Bucket): string {
  return bucket === 'hour' ? when(start) : start.toISOString().slice(0, 10);
}

/** Under the axis: the hour, or the date at midnight and by day. */
function bucketTick(start: Date, bucket: Bucket): string {
  const iso = start.toISOString();
  return bucket === 'hour' && start.getUTCHours() !== 0 ? iso.slice(11, 16) : iso.slice(5, 10);
}

/** A chart's section: heading, what it counts, the chart and its numbers, or a sentence when empty. */
function ChartCard(props: { id: string; heading: string; empty?: string | false; children?: Child }) {
  return (
    <section class="card" aria-labelledby={`${props.id}-heading`}>
      <h2 id={`${props.id}-heading`}>{props.heading}</h2>
      {props.empty ? <p>{props.empty}</p> : props.children}
    </section>
  );
}

function Count({ n }: { n: number }) {
  return <td class="count">{n.toLocaleString('en')}</td>;
}

function CallsPerServer({ data, range }: { data: ChartData; range: ChartRange }) {
  const totals = new Map<string, number>();
  for (const row of data.calls) totals.set(row.server, (totals.get(row.server) ?? 0) + row.calls);
  const series = [...totals.keys()].sort((a, b) => totals.get(b)! - totals.get(a)! || a.localeCompare(b));
  const byBucket = new Map(data.calls.map((r) => [`${r.bucket.getTime()} ${r.server}`, r.calls]));
  const columns = bucketStarts(range).map((start) => ({
    title: bucketTitle(start, range.bucket),
    tick: bucketTick(start, range.bucket),
    values: series.map((s) => byBucket.get(`${start.getTime()} ${s}`) ?? 0),
  }));
  const per = range.bucket === 'hour' ? 'hour' : 'day';
  return (
    <ChartCard id="calls" heading="Calls per server" empty={!series.length && 'No tool calls in this range.'}>
      <ColumnChart
        id="calls-chart"
        title={`Tool calls per server and ${per}, stacked; each mark's title holds its number`}
        series={series}
        columns={columns}
        unit={CALLS}
      />
      <ul class="legend" aria-label="Servers">
        {series.map((server, i) => (
          <li>
            <Swatch fill={colour(i)} /> <Shown text={server} />: {counted(totals.get(server)!, CALLS)}
          </li>
        ))}
      </ul>
      {/* A table does not clip what overflows it: the box around it hides it, even on a phone. */}
      <div class="visually-hidden">
        <table>
          <caption>{`Calls per server and ${per}, in numbers (${per}s without calls left out)`}</caption>
          <thead>
            <tr>
              <th scope="col">{per === 'hour' ? 'Hour' : 'Day'}</th>
              {series.map((s) => (
                <th scope="col">
                  <Shown text={s} />
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {columns
              .filter((c) => c.values.some((v) => v > 0))
              .map((c) => (
                <tr>
                  <th scope="row">{c.title}</th>
                  {c.values.map((v) => (
                    <Count n={v} />
                  ))}
                </tr>
              ))}
          </tbody>
        </table>
      </div>
    </ChartCard>
  );
}

function CallsPerTool({ data }: { data: ChartData }) {
  const shown =
    data.toolCount > TOP_TOOLS ? `The ${TOP_TOOLS} busiest of ${data.toolCount} tools` : 'Every tool called';
  return (
    <ChartCard
      id="tools"
      heading="Calls per tool"
      empty={!data.tools.length && 'No tool calls in this range.'}
    >
      <BarChart
        id="tools-chart"
        title={`Tool calls per tool, busiest first: ${shown.toLowerCase()}`}
        bars={data.tools.map((t) => ({ label: `${t.server}/${t.tool}`, value: t.calls }))}
        unit={CALLS}
      />
      <table class="numbers">
        <caption>{`${shown}, in numbers`}</caption>
        <thead>
          <tr>
            <th scope="col">Server</th>
            <th scope="col">Tool</th>
            <th scope="col" class="count">
              Calls
            </th>
          </tr>
        </thead>
        <tbody>
          {data.tools.map((t) => (
            <tr>
              <td>
                <Shown text={t.server} />
              </td>
              <td>
                <code>
                  <Shown text={t.tool} />
                </code>
              </td>
              <Count n={t.calls} />
            </tr>
          ))}
        </tbody>
      </table>
    </ChartCard>
  );
}

function RefusalsByReason({ data }: { data: ChartData }) {
  return (
    <ChartCard
      id="refusals"
      heading="Refusals and failures by reason"
      empty={!data.refusals.length && 'Nothing was refused and nothing failed in this range.'}
    >
      <p class="hint">
        Every event of the audit log whose outcome is neither ok nor a step of an approval, by outcome and the
        reason it names. A client's request for an event stream (GET, answered 405) is housekeeping, not
        counted.
      </p>
      <BarChart
        id="refusals-chart"
        title="Refused and failed events by outcome and reason"
        bars={data.refusals.map((r) => ({
          label: r.reason === null ? r.outcome : `${r.outcome}: ${r.reason}`,
          value: r.events,
        }))}
        unit={EVENTS}
        fill={colour(4)}
      />
      <table class="numbers">
        <caption>Refusals and failures by reason, in numbers</caption>
        <thead>
          <tr>
            <th scope="col">Outcome</th>
            <th scope="col">Reason</th>
            <th scope="col" class="count">
              Events
            </th>
          </tr>
        </thead>
        <tbody>
          {data.refusals.map((r) => (
            <tr>
              <td>
                <code>
                  <Shown text={r.outcome} />
                </code>
              </td>
              <td>{r.reason === null ? '—' : <Shown text={r.reason} />}</td>
              <Count n={r.events} />
            </tr>
          ))}
        </tbody>
      </table>
    </ChartCard>
  );
}

function ApprovalOutcomes({ data }: { data: ChartData }) {
  const rows = APPROVAL_STATUSES.flatMap((status) => {
    const n = data.approvals.find((a) => a.status === status)?.requests ?? 0;
    return n ? [{ status, requests: n }] : [];
  });
  return (
    <ChartCard
      id="approvals"
      heading="Approval requests by outcome"
      empty={!rows.length && 'No approval was requested in this range.'}
    >
      <BarChart
        id="approvals-chart"
        title="Approval requests made in this range, by where they stand now"
        bars={rows.map((r) => ({ label: STATUS_WORDS[r.status], value: r.requests }))}
        unit={REQUESTS}
        fill={colour(2)}
      />
      <table class="numbers">
        <caption>Approval requests by outcome, in numbers</caption>
        <thead>
          <tr>
            <th scope="col">Outcome</th>
            <th scope="col" class="count">
              Requests
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr>
              <td>{STATUS_WORDS[r.status]}</td>
              <Count n={r.requests} />
            </tr>
          ))}
        </tbody>
      </table>
    </ChartCard>
  );
}

function TimeToDecision({ data }: { data: ChartData }) {
  const d = data.decisions;
  return (
    <ChartCard
      id="decisions"
      heading="Time to decision"
      empty={!d.decided && 'No request of this range has been decided.'}
    >
      <dl class="meta">
        <dt>Decided</dt>
        <dd>{counted(d.decided, REQUESTS)}</dd>
        <dt>Median</dt>
        <dd>{duration(d.medianSeconds ?? 0)}</dd>
        <dt>90th percentile</dt>
        <dd>{duration(d.p90Seconds ?? 0)}</dd>
      </dl>
      <ColumnChart
        id="decisions-chart"
        title="Decided requests by the time from request to decision"
        series={['decided requests']}
        columns={DECISION_BINS.map((bin, i) => ({
          title: bin.label,
          tick: bin.label,
          values: [d.histogram[i]!],
        }))}
        unit={REQUESTS}
      />
      <table class="numbers">
        <caption>Time to decision, in numbers</caption>
        <thead>
          <tr>
            <th scope="col">From request to decision</th>
            <th scope="col" class="count">
              Requests
            </th>
          </tr>
        </thead>
        <tbody>
          {DECISION_BINS.map((bin, i) => (
            <tr>
              <td>{bin.label}</td>
              <Count n={d.histogram[i]!} />
            </tr>
          ))}
        </tbody>
      </table>
    </ChartCard>
  );
}

/** The unsealed tail: its age as the figure, how many events it holds beside it. */
function Backlog({ data, now }: { data: ChartData; now: Date }) {
  const { unsealed, oldestAt } = data.backlog;
  return (
    <section class="card" aria-labelledby="backlog-heading">
      <h2 id="backlog-heading">Unsealed audit events</h2>
      {oldestAt === null ? (
        <p>Every event of the audit log is sealed.</p>
      ) : (
        <>
          <p class="figure" id="backlog-age">
            {duration((now.getTime() - oldestAt.getTime()) / 1000)}
          </p>
          <p>
            The age of the oldest of <span id="backlog-count">{counted(unsealed, EVENTS)}</span> that no seal
            covers yet, written <time datetime={oldestAt.toISOString()}>{when(oldestAt)}</time>. This does not
            depend on the range; the sealer keeps it short.
          </p>
        </>
      )}
    </section>
  );
}

function RangeForm({ fields }: { fields: RangeFields }) {
  return (
    <form method="get" action="/operator/charts" class="filters" aria-label="Range">
      <div>
        <label for="from">From (UTC)</label>
        <input id="from" name="from" type="datetime-local" value={fields.from} required />
      </div>
      <div>
        <label for="to">To (UTC)</label>
        <input id="to" name="to" type="datetime-local" value={fields.to} required />
      </div>
      <div>
        <label for="bucket">Count by</label>
        <select id="bucket" name="bucket">
          <option value="hour" selected={fields.bucket !== 'day'}>
            Hour
          </option>
          <option value="day" selected={fields.bucket === 'day'}>
            Day
          </option>
        </select>
      </div>
      <div>
        <button class="primary" type="submit">
          Show
        </button>
      </div>
    </form>
  );
}

/**
 * The operators' charts over a range, from the audit log and the approvals: calls per server over time
 * and per tool, refusals by reason, approvals by outcome and time to decision, and the unsealed tail.
 */
export function ChartsPage(props: {
  approver: Approver;
  fields: RangeFields;
  error?: string | undefined;
  shown?: { range: ChartRange; data: ChartData; now: Date } | undefined;
}) {
  const { shown } = props;
  return (
    <Layout title="Charts" approver={props.approver} current="charts">
      <h1>Charts</h1>
      <RangeForm fields={props.fields} />
      {props.error && (
        <div class="error" role="alert">
          {props.error}
        </div>
      )}
      {shown && (
        <>
          <p class="hint">
            From {when(shown.range.from)} to {when(shown.range.to)}, counted by {shown.range.bucket} from the
            audit log and the approvals.
          </p>
          <Backlog data={shown.data} now={shown.now} />
          <CallsPerServer data={shown.data} range={shown.range} />
          <CallsPerTool data={shown.data} />
          <RefusalsByReason data={shown.data} />
          <ApprovalOutcomes data={shown.data} />
          <TimeToDecision data={shown.data} />
        </>
      )}
    </Layout>
  );
}
