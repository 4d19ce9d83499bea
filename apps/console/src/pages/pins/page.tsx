/** @jsxImportSource hono/jsx */
import type { McpDriftRecord } from '@bulkhead/core/operator';
import { Layout } from '../../layout/layout.tsx';
import { ago, when } from '../../layout/time.ts';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';
import { COMPARED, fieldText } from './drift.ts';

/** The address of one drift's page. */
export const driftHref = (d: Pick<McpDriftRecord, 'server' | 'upstream' | 'tool' | 'sha256'>) =>
  `/operator/pins/${[d.server, d.upstream, d.tool, d.sha256].map(encodeURIComponent).join('/')}`;

function state(d: McpDriftRecord): string {
  if (d.acceptedBy) return `accepted by ${d.acceptedBy}`;
  if (d.kind === 'new') return 'new: not served (pinned by code review)';
  return d.blocked ? 'withheld; blocked by the tool linter' : 'withheld until accepted';
}

/** Every drift: which server and tool, what kind, where it stands, and a link to its side-by-side page. */
export function PinsPage(props: {
  approver: Approver;
  drifts: McpDriftRecord[];
  notice?: string | undefined;
}) {
  return (
    <Layout title="Pins" approver={props.approver} current="tools">
      <h1>Pins</h1>
      <p>
        A server in front of an upstream MCP server serves the tool definitions pinned in its folder. When the
        upstream's live definition of a pinned tool changes, the tool is withheld from every client until an
        operator accepts the new text here (or the pins are updated and deployed). A definition the tool
        linter finds poisoned cannot be accepted.
      </p>
      {props.notice && (
        <div class="notice" role="status">
          {props.notice}
        </div>
      )}
      <section class="card">
        <h2>Drift</h2>
        {props.drifts.length === 0 ? (
          <p>No upstream has drifted from its pins.</p>
        ) : (
          <table class="stack">
            <caption>Every drift of an upstream from a server's pins, newest first.</caption>
            <thead>
              <tr>
                <th scope="col">Server</th>
                <th scope="col">Upstream</th>
                <th scope="col">Tool</th>
                <th scope="col">Kind</th>
                <th scope="col">State</th>
                <th scope="col">Seen</th>
              </tr>
            </thead>
            <tbody>
              {props.drifts.map((d) => (
                <tr>
                  <td data-label="Server">
                    <Shown text={d.server} />
                  </td>
                  <td data-label="Upstream">
                    <Shown text={d.upstream} />
                  </td>
                  <td data-label="Tool">
                    <a href={driftHref(d)}>
                      <Shown text={d.tool} />
                    </a>
                  </td>
                  <td data-label="Kind">{d.kind}</td>
                  <td data-label="State">
                    <Shown text={state(d)} />
                  </td>
                  <td data-label="Seen">
                    <time datetime={d.seenAt.toISOString()}>{when(d.seenAt)}</time> ({ago(d.seenAt)})
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </Layout>
  );
}

/** One drift: the pinned and the live definition side by side, field by field, its findings, and Accept. */
export function DriftPage(props: {
  approver: Approver;
  drift: McpDriftRecord;
  error?: string | undefined;
  notice?: string | undefined;
}) {
  const d = props.drift;
  const acceptable = d.kind === 'changed' && !d.blocked && !d.acceptedBy;
  return (
    <Layout title={`Drift of ${d.tool}`} approver={props.approver} current="tools">
      <h1>
        Drift of <Shown text={d.tool} />
      </h1>
      <p>
        <Shown text={`${d.upstream} (for ${d.server}), sha256 ${d.sha256}: ${state(d)}.`} />
      </p>
      {props.notice && (
        <div class="notice" role="status">
          {props.notice}
        </div>
      )}
      {props.error && (
        <div class="error" role="alert">
          {props.error}
        </div>
      )}
      <table class="diff">
        <caption>The pinned definition and the one the upstream lists now, field by field.</caption>
        <thead>
          <tr>
            <th scope="col">Field</th>
            <th scope="col">Pinned</th>
            <th scope="col">Upstream now</th>
          </tr>
        </thead>
        <tbody>
          {COMPARED.map((field) => {
            const before = fieldText(d.pinned, field);
            const after = fieldText(d.live, field);
            return (
              <tr class={before === after ? 'same' : 'changed'}>
                <th scope="row">{field}</th>
                <td data-label="Pinned">
                  <pre>
                    <Shown text={before} lineBreaks />
                  </pre>
                </td>
                <td data-label="Upstream now">
                  <pre>
                    <Shown text={after} lineBreaks />
                  </pre>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <section class="card">
        <h2>Tool linter</h2>
        {d.findings.length === 0 ? (
          <p>No findings on the new definition.</p>
        ) : (
          <ul>
            {d.findings.map((f) => (
              <li>
                <Shown text={`${f.rule} (${f.path}): ${f.message}`} />
              </li>
            ))}
          </ul>
        )}
        {d.blocked && (
          <p>
            <strong>Cannot be accepted:</strong> <Shown text={d.blocked} />
          </p>
        )}
      </section>
      {acceptable && (
        <form method="post" action="/operator/pins/accept">
          <input type="hidden" name="_csrf" value={props.approver.csrf ?? ''} />
          {(['server', 'upstream', 'tool', 'sha256'] as const).map((k) => (
            <input type="hidden" name={k} value={d[k]} />
          ))}
          <div class="actions">
            <button type="submit">Accept the new definition</button>
          </div>
        </form>
      )}
    </Layout>
  );
}
