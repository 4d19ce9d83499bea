/** @jsxImportSource hono/jsx */
import { visible, type SwitchedOffTool } from '@bulkhead/core/operator';
import { Layout } from '../../layout/layout.tsx';
import { ago, when } from '../../layout/time.ts';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';
import type { SeenTool } from './switches.ts';

/** What a switch came to, told once after the form redirects back. */
export type SwitchNotice = { done: 'off' | 'on' | 'was-off' | 'was-on'; server: string; tool: string };

/** The switch-off form's values, given back with an error. */
export interface SwitchForm {
  server: string;
  tool: string;
  reason: string;
}

/** A tool name's pattern for the browser (the `v` flag it applies wants `-` escaped in a class). */
const TOOL_PATTERN = '[A-Za-z0-9._\\-]{1,128}';

function Notice({ notice: n }: { notice: SwitchNotice }) {
  const what = (
    <>
      <code>
        <Shown text={n.tool} />
      </code>{' '}
      of <Shown text={n.server} />
    </>
  );
  return (
    <div class="notice" role="status">
      {n.done === 'off' ? (
        <>
          Switched {what} off: every replica of the server leaves it out of tools/list and refuses calls to it
          within a second.
        </>
      ) : n.done === 'on' ? (
        <>Switched {what} on again: every replica of the server lists and serves it within a second.</>
      ) : n.done === 'was-off' ? (
        <>{what} was already off; nothing changed.</>
      ) : (
        <>{what} was not switched off; nothing changed.</>
      )}
    </div>
  );
}

function SwitchedOff({ switches, csrf }: { switches: SwitchedOffTool[]; csrf: string }) {
  return (
    <section class="card" aria-labelledby="off-heading">
      <h2 id="off-heading">Switched off</h2>
      {switches.length === 0 ? (
        <p>No tool is switched off.</p>
      ) : (
        <table class="stack">
          <caption>Every switched-off tool, by server and tool.</caption>
          <thead>
            <tr>
              <th scope="col">Server</th>
              <th scope="col">Tool</th>
              <th scope="col">Reason</th>
              <th scope="col">By</th>
              <th scope="col">Since</th>
              <th scope="col">
                <span class="visually-hidden">Switch on</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {switches.map((s) => (
              <tr>
                <td data-label="Server">
                  <Shown text={s.server} />
                </td>
                <td data-label="Tool">
                  <code>
                    <Shown text={s.tool} />
                  </code>
                </td>
                <td data-label="Reason">
                  <Shown text={s.reason} />
                </td>
                <td data-label="By">
                  <Shown text={s.switchedBy} />
                </td>
                <td data-label="Since">
                  <time datetime={s.switchedAt.toISOString()}>{when(s.switchedAt)}</time> ({ago(s.switchedAt)}
                  )
                </td>
                <td>
                  <form method="post" action="/operator/tools/on">
                    <input type="hidden" name="_csrf" value={csrf} />
                    <input type="hidden" name="server" value={s.server} />
                    <input type="hidden" name="tool" value={s.tool} />
                    <button
                      class="secondary"
                      type="submit"
                      aria-label={`Switch on ${visible(s.tool)} of ${visible(s.server)}`}
                    >
                      Switch on
                    </button>
                  </form>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function SwitchOffForm(props: {
  servers: readonly string[];
  seen: SeenTool[];
  csrf: string;
  form?: SwitchForm | undefined;
  error?: string | undefined;
}) {
  const described = (hint: string) => (props.error ? `${hint} switch-error` : hint);
  return (
    <section class="card narrow" aria-labelledby="switch-heading">
      <h2 id="switch-heading">Switch a tool off</h2>
      {props.servers.length === 0 ? (
        <p>The console knows no MCP server (its OAuth servers): there is nothing to switch.</p>
      ) : (
        <form method="post" action="/operator/tools/off">
          <input type="hidden" name="_csrf" value={props.csrf} />
          <label for="server">Server</label>
          <select id="server" name="server" required>
            {props.servers.map((s) => (
              <option value={s} selected={s === props.form?.server}>
                {s}
              </option>
            ))}
          </select>
          <label for="tool" class="later">
            Tool
          </label>
          <p class="hint" id="tool-hint">
            Its name as the server lists it; the suggestions are the tools called in the last 30 days.
          </p>
          <input
            id="tool"
            name="tool"
            list="seen-tools"
            required
            maxlength={128}
            pattern={TOOL_PATTERN}
            autocomplete="off"
            spellcheck={false}
            value={props.form?.tool ?? ''}
            aria-describedby={described('tool-hint')}
          />
          <datalist id="seen-tools">
            {props.seen.map((t) => (
              <option value={t.tool} label={t.server} />
            ))}
          </datalist>
          <label for="reason" class="later">
            Reason
          </label>
          <p class="hint" id="reason-hint">
            Why it goes off, for the audit log and the list above; at most 500 characters.
          </p>
          <textarea
            id="reason"
            name="reason"
            required
            maxlength={500}
            rows={3}
            aria-describedby={described('reason-hint')}
          >
            {props.form?.reason ?? ''}
          </textarea>
          <div class="actions">
            <button class="reject" type="submit">
              Switch off
            </button>
          </div>
        </form>
      )}
    </section>
  );
}

/**
 * The tool switch: the switched-off tools with a button to switch each on again, and the form that
 * switches one tool of one MCP server off, with a reason.
 */
export function ToolsPage(props: {
  approver: Approver;
  switches: SwitchedOffTool[];
  servers: readonly string[];
  seen: SeenTool[];
  notice?: SwitchNotice | undefined;
  error?: string | undefined;
  form?: SwitchForm | undefined;
}) {
  const csrf = props.approver.csrf ?? '';
  return (
    <Layout title="Tools" approver={props.approver} current="tools">
      <h1>Tools</h1>
      <p>
        A tool switched off for an incident is left out of its server's tools/list on every replica within a
        second, and a call to it is refused as a call to an unknown tool. It stays off, across restarts, until
        it is switched on again. Every switch is audited.
      </p>
      <p>
        A tool served from an upstream MCP server is also withheld when the upstream changes its definition,
        until an operator accepts the new text: see <a href="/operator/pins">Pins</a>.
      </p>
      {props.notice && <Notice notice={props.notice} />}
      {props.error && (
        <div class="error" role="alert" id="switch-error">
          {props.error}
        </div>
      )}
      <SwitchedOff switches={props.switches} csrf={csrf} />
      <SwitchOffForm
        servers={props.servers}
        seen={props.seen}
        csrf={csrf}
        form={props.form}
        error={props.error}
      />
    </Layout>
  );
}
