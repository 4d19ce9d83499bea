/** @jsxImportSource hono/jsx */
import { AUDIT_COLUMN_NAMES, eventRow, type AuditEvent, type EventSealStatus } from '@bulkhead/audit';
import { Json } from '../../layout/json.tsx';
import { Layout } from '../../layout/layout.tsx';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';
import { stamp } from './page.tsx';

/** Columns that hold JSON as stored, shown as JSON. */
const JSON_COLUMNS: readonly string[] = ['arguments', 'result_summary'];

/** How long ago, to the unit a reader needs. */
function age(d: Date, now: Date): string {
  const s = Math.max(0, Math.round((now.getTime() - d.getTime()) / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** What the seal says of the event, in a sentence, and whether that is good (`ok`), bad or only news. */
function sealSentence(
  status: EventSealStatus,
  event: AuditEvent,
  now: Date,
): { tone: 'ok' | 'bad' | 'plain'; text: string } {
  switch (status.state) {
    case 'unsealed':
      return { tone: 'plain', text: `in the unsealed tail (not sealed yet, age ${age(event.at, now)}).` };
    case 'inserted_afterwards':
      return {
        tone: 'bad',
        text: `not sealed, though numbered inside seal ${status.sealNo}: inserted afterwards, tampered.`,
      };
    case 'in_pruned_range':
      return {
        tone: 'bad',
        text: 'not sealed, though numbered where the sealed log begins or before it (its pruned part): inserted afterwards, tampered.',
      };
    case 'seal_missing':
      return {
        tone: 'bad',
        text: 'numbered inside the sealed log, but the seal of its range is missing: deleted, tampered.',
      };
    case 'sealed': {
      const sealed = `sealed by seal ${status.sealNo}`;
      const at = `sealed at ${stamp(status.sealedAt)}`;
      switch (status.check) {
        case 'verified':
          return {
            tone: 'ok',
            text: `${sealed} (${at}) and verified: its digest is the one sealed, and the seal matches its MAC.`,
          };
        case 'event_changed':
          return {
            tone: 'bad',
            text: `${sealed}, digest does not match: tampered. The event was changed after it was ${at}.`,
          };
        case 'seal_changed':
          return {
            tone: 'bad',
            text: `${sealed} (${at}), but the seal does not match its MAC: tampered, or sealed with another key than the console's.`,
          };
        case 'no_key':
          return {
            tone: 'plain',
            text: `${sealed} (${at}); not verified here: the console holds no audit key (BULKHEAD_AUDIT_KEY). bulkhead audit verify checks it.`,
          };
      }
    }
  }
}

function FieldValue({ column, value }: { column: string; value: unknown }) {
  if (JSON_COLUMNS.includes(column)) return <Json value={value} />;
  if (value === null || value === undefined) return <code>null</code>;
  if (value instanceof Date) return <time datetime={value.toISOString()}>{value.toISOString()}</time>;
  if (typeof value === 'string') return <Shown text={value} />;
  return <code>{String(value)}</code>;
}

/** One event: where it stands in the sealed log, and every field as stored. */
export function AuditEventPage(props: {
  approver: Approver;
  pending: number;
  event: AuditEvent;
  seal: EventSealStatus;
}) {
  const e = props.event;
  const seal = sealSentence(props.seal, e, new Date());
  const row = eventRow(e) as Record<string, unknown>;
  return (
    <Layout title={`Event #${e.seq}`} approver={props.approver} pending={props.pending} current="audit">
      <h1>Event #{e.seq}</h1>
      <section class="card" aria-labelledby="seal">
        <h2 id="seal">Seal</h2>
        <p
          class={seal.tone === 'ok' ? 'notice' : seal.tone === 'bad' ? 'error' : undefined}
          role={seal.tone === 'bad' ? 'alert' : undefined}
          id="seal-status"
        >
          This event is {seal.text}
        </p>
      </section>
      <section class="card" aria-labelledby="fields">
        <h2 id="fields">As stored</h2>
        <dl class="meta">
          {AUDIT_COLUMN_NAMES.map((column) => (
            <>
              <dt>
                <code>{column}</code>
              </dt>
              <dd>
                <FieldValue column={column} value={row[column]} />
              </dd>
            </>
          ))}
        </dl>
      </section>
      <p>
        <a href="/operator/audit">Back to the audit log</a>
      </p>
    </Layout>
  );
}
