/** @jsxImportSource hono/jsx */
import { createHash } from 'node:crypto';
import type {
  ApprovalDelivery,
  ApprovalEvent,
  CaughtMail,
  ApprovalRecord,
  ApprovalStatus,
} from '@bulkhead/core/operator';
import { APPROVAL_STATUSES, effectiveStatus, visible } from '@bulkhead/core/operator';
import type { Context } from 'hono';
import { html } from 'hono/html';
import type { Child } from 'hono/jsx';
import type { JSX } from 'hono/jsx/jsx-runtime';
import type { Approver } from './sessions.ts';
import {
  anyFindings,
  argumentFindings,
  ArgumentTable,
  findings,
  Findings,
  mergeFindings,
  Shown,
  type ArgumentRow,
  type TextFindings,
} from './shown.tsx';

// Below 40rem (a phone, where an approver is when a request comes in) the header wraps into rows of
// 44 px targets, lists of facts and tables of arguments stack, and the tables marked `stack` show each
// row as a block of labelled cells: nothing is wider than the screen.
const CSS = `
:root{--fg:#1b1b1f;--muted:#4a4a55;--bg:#f5f6f8;--line:#c9ced6;--link:#0b57d0;--ok:#146c2e;--bad:#a50e0e;--head:#1b2a41}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--link)}
:focus-visible{outline:3px solid #ffbf47;outline-offset:2px;box-shadow:0 0 0 5px var(--fg)}
.skip{position:absolute;left:-9999px}.skip:focus{left:1rem;top:1rem;background:#fff;color:var(--fg);padding:.5rem 1rem;z-index:1}
header{background:var(--head);color:#fff}
header .bar{max-width:62rem;margin:0 auto;padding:.75rem 1rem;display:flex;gap:1.5rem;align-items:center;flex-wrap:wrap}
header .brand{font-weight:700;font-size:1.1rem;color:#fff;text-decoration:none}
header nav ul{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1.25rem;margin:0;padding:0}
header nav a{color:#fff}
header nav a[aria-current=page]{font-weight:700;text-decoration-thickness:3px}
header .who{margin-left:auto;display:flex;gap:.75rem;align-items:center}
header form{margin:0}
main{max-width:62rem;margin:0 auto;padding:1.5rem 1rem 3rem}
h1{font-size:1.6rem;margin:0 0 1rem}
h2{font-size:1.15rem;margin:0 0 .5rem}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:1rem 1.25rem;margin:0 0 1rem}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:.5rem 0}
dt{color:var(--muted);font-weight:600}
dd{margin:0;min-width:0}
pre{background:#f0f2f5;border:1px solid var(--line);border-radius:6px;padding:.6rem .75rem;overflow:auto;font-size:.875rem;margin:0;white-space:pre-wrap;word-break:break-word}
code{font-size:.95em}
.preview{font-size:1.1rem;border-left:4px solid var(--head);padding:.25rem 0 .25rem .75rem;margin:.25rem 0 1rem}
.badge{display:inline-block;padding:.05rem .6rem;border-radius:999px;font-size:.85rem;font-weight:600;border:1px solid currentColor}
.badge.pending{background:#fff4ce;color:#5c4400}
.badge.approved,.badge.executed{background:#e6f4ea;color:#0d5223}
.badge.rejected,.badge.failed{background:#fce8e6;color:#8c1d18}
.badge.expired,.badge.withdrawn{background:#eceff1;color:#3c4043}
button,.button{font:inherit;font-weight:600;padding:.5rem 1.1rem;border-radius:6px;border:2px solid transparent;cursor:pointer;text-decoration:none;display:inline-block;line-height:1.4}
.approve{background:var(--ok);color:#fff}
.reject{background:var(--bad);color:#fff}
.primary{background:var(--link);color:#fff}
.secondary{background:#fff;color:var(--fg);border-color:var(--line)}
header .secondary{padding:.25rem .75rem}
label{display:block;font-weight:600;margin-bottom:.25rem}
textarea,input,select{font:inherit;padding:.5rem;border:2px solid #5f6368;border-radius:6px;width:100%;background:#fff;color:var(--fg)}
.hint{color:var(--muted);font-size:.9rem;margin:.25rem 0 .75rem}
.actions{display:flex;gap:.75rem;margin-top:.75rem;flex-wrap:wrap}
.error,.notice{padding:.75rem 1rem;border-radius:6px;margin:0 0 1rem;border:2px solid}
.error{border-color:var(--bad);background:#fce8e6;color:#5f0f0b}
.notice{border-color:var(--ok);background:#e6f4ea;color:#0d3d1c}
table{width:100%;border-collapse:collapse;background:#fff;border:1px solid var(--line)}
caption{text-align:left;color:var(--muted);padding:.25rem 0}
th,td{text-align:left;padding:.5rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#eef0f3}
.filters{display:flex;gap:1rem;flex-wrap:wrap;align-items:flex-end;margin-bottom:1rem}
.filters div{min-width:11rem}
.narrow{max-width:28rem}
.later{margin-top:1rem}
.chart{display:block;width:100%;height:auto;margin:.5rem 0}
.legend{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1.25rem;margin:.25rem 0 .75rem;padding:0}
.legend svg{vertical-align:-1px}
.figure{font-size:2.25rem;font-weight:700;line-height:1.2;margin:.25rem 0}
table.numbers{margin:.75rem 0 0}
.count{text-align:right;font-variant-numeric:tabular-nums}
.visually-hidden{position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}
bdi{unicode-bidi:isolate}
mark.hidden{background:#fff0b3;color:#4d2600;border:1px solid #8a4b00;border-radius:3px;padding:0 .15em;font:600 .8em ui-monospace,monospace;white-space:nowrap}
mark.mixed{background:#fde2e1;color:inherit;text-decoration:underline wavy var(--bad);text-underline-offset:.2em}
.odd{background:var(--bad);color:#fff;font-weight:700;padding:0 .1em;border-radius:2px}
.text{background:#f0f2f5;border:1px solid var(--line);border-radius:6px;padding:.6rem .75rem;white-space:pre-wrap;word-break:break-word;font:.95rem/1.5 ui-monospace,SFMono-Regular,Menlo,monospace}
.findings{margin:.5rem 0 0;padding-left:1.25rem;font-size:.9rem}
.findings li{margin:.2rem 0}
.warn{padding:.75rem 1rem;border-radius:6px;margin:0 0 1rem;border:2px solid #8a4b00;background:#fff4ce;color:#3d2600}
.warn p{margin:0}
table.args{margin:.5rem 0}
table.args th[scope=row]{width:12rem;font-weight:600}
table.args .error{margin:0 0 .5rem}
.badge.active{background:#e6f4ea;color:#0d5223}
.badge.revoked{background:#fce8e6;color:#8c1d18}
.scroll{overflow-x:auto;margin:0 0 1rem}
body:has(table.list) :is(main,header .bar){max-width:90rem}
table.list{font-size:.9rem}
table.list th,table.list td{padding:.4rem .5rem}
form.inline{margin:.4rem 0 0}
button.small{padding:.2rem .6rem;font-size:.85rem}
fieldset{border:1px solid var(--line);border-radius:6px;margin:.5rem 0 1rem;padding:.5rem .75rem}
legend{font-weight:600;padding:0 .25rem}
label.check{display:flex;gap:.5rem;align-items:center;font-weight:400}
label.check input{width:auto}
#token{font-size:1rem;word-break:break-all}
h1,h2,.preview,dd,td,th,li,p{overflow-wrap:break-word}
@media (max-width:40rem){
header .bar{gap:.25rem 1rem;padding:.5rem 1rem}
header nav{flex-basis:100%}
header nav ul{gap:0 .25rem;margin:0 -.5rem}
header nav a{display:flex;align-items:center;min-height:44px;padding:0 .5rem}
header .who{margin-left:0;flex-basis:100%;justify-content:space-between;padding-bottom:.25rem}
header .secondary{min-height:44px;flex:none;white-space:nowrap}
main{padding:1rem .75rem 2rem}
h1{font-size:1.4rem}
.card{padding:.75rem}
button,.button,textarea,input,select{min-height:44px}
.filters div{min-width:0;flex:1 1 9rem}
.filters div:has(input[type=datetime-local]){flex-basis:100%}
dl.meta{grid-template-columns:1fr;gap:0}
dl.meta dd{margin-bottom:.4rem}
:is(table.args,table.stack),:is(table.args,table.stack) :is(caption,tbody,tr,td),table.args th[scope=row]{display:block;width:auto}
:is(table.args,table.stack) caption{padding:.25rem .6rem}
:is(table.args,table.stack) thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
:is(table.args,table.stack) thead :is(tr,th){display:block}
table.args th[scope=row]{border-bottom:0;padding-bottom:0;background:none}
table.stack tr{border-bottom:1px solid var(--line);padding:.3rem 0}
table.stack td{display:flow-root;border:0;padding:.15rem .6rem .15rem 8rem}
table.stack td[data-label]::before{content:attr(data-label);float:left;width:7rem;margin-left:-7.4rem;color:var(--muted);font-weight:600}
table.stack td:not([data-label]){padding-left:.6rem}
}
`;

/** The Content-Security-Policy source for the one inline stylesheet: no other style or script can run. */
export const STYLE_HASH = `'sha256-${createHash('sha256').update(CSS).digest('base64')}'`;

/** Answers with `element` as a whole HTML document. */
export function page(c: Context, element: JSX.Element, status = 200) {
  return c.html(html`<!doctype html>${element}`, status as 200);
}

/** `2026-11-29 14:03 UTC`. */
export function when(d: Date): string {
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** How long ago, in words a person reads at a glance. */
export function ago(d: Date, now = new Date()): string {
  const s = Math.max(0, Math.round((now.getTime() - d.getTime()) / 1000));
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

function until(d: Date, now = new Date()): string {
  const s = Math.round((d.getTime() - now.getTime()) / 1000);
  if (s <= 0) return 'lapsed';
  if (s < 3600) return `in ${Math.max(1, Math.round(s / 60))} min`;
  if (s < 86400) return `in ${Math.round(s / 3600)} h`;
  return `in ${Math.round(s / 86400)} d`;
}

/** An approval's status as the pages say it. */
export const STATUS_WORDS: Record<ApprovalStatus, string> = {
  pending: 'Waiting for a decision',
  approved: 'Approved, about to run',
  executed: 'Approved and executed',
  rejected: 'Rejected',
  expired: 'Expired undecided',
  failed: 'Approved, but failed',
  withdrawn: 'Withdrawn by the requester',
};

/** The "Tool" entry of an approval's list of facts: the tool, on its server. */
function ToolOn({ approval: a }: { approval: ApprovalRecord }) {
  return (
    <>
      <dt>Tool</dt>
      <dd>
        <code>
          <Shown text={a.tool} />
        </code>{' '}
        on <Shown text={a.server} />
      </dd>
    </>
  );
}

function Badge({ status }: { status: ApprovalStatus }) {
  return <span class={`badge ${status}`}>{STATUS_WORDS[status]}</span>;
}

/** A value as indented JSON, every character shown for what it is. */
export function Json({ value }: { value: unknown }) {
  return (
    <pre>
      <Shown text={JSON.stringify(value, null, 2) ?? 'undefined'} lineBreaks />
    </pre>
  );
}

/** The warning above a request that holds hidden characters or mixed-script words. */
function LookClosely({ of, where }: { of: TextFindings; where: string }) {
  if (!anyFindings(of)) return null;
  const parts = [
    of.hidden.size
      ? `${[...of.hidden.values()].reduce((a, b) => a + b, 0)} hidden character${[...of.hidden.values()].reduce((a, b) => a + b, 0) === 1 ? '' : 's'}`
      : '',
    of.mixed.length ? `${of.mixed.length} word${of.mixed.length === 1 ? '' : 's'} mixing scripts` : '',
  ].filter(Boolean);
  return (
    <div class="warn" role="note">
      <p>
        Look closely: this request holds {parts.join(' and ')}, marked {where}. What you read may not be what
        will run.
      </p>
    </div>
  );
}

/** The operators' pages, in the navigation of an operator only. */
const OPERATOR_PAGES = [
  ['tokens', '/operator/tokens', 'Tokens'],
  ['audit', '/operator/audit', 'Audit log'],
  ['charts', '/operator/charts', 'Charts'],
  ['tools', '/operator/tools', 'Tools'],
] as const;

/** The page frame: skip link, header with navigation and sign-out, one main landmark. */
export function Layout(props: {
  title: string;
  approver?: Approver | undefined;
  /** How many requests wait, for the navigation; a page that did not count them shows no number. */
  pending?: number | undefined;
  current?: 'pending' | 'history' | 'mail' | 'tokens' | 'audit' | 'charts' | 'tools' | undefined;
  children?: Child;
}) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} — Bulkhead approvals`}</title>
        <style dangerouslySetInnerHTML={{ __html: CSS }} />
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header>
          <div class="bar">
            <a class="brand" href="/">
              Bulkhead approvals
            </a>
            {props.approver && (
              <nav aria-label="Main">
                <ul>
                  <li>
                    <a href="/" aria-current={props.current === 'pending' ? 'page' : undefined}>
                      {props.pending === undefined ? 'Pending' : `Pending (${props.pending})`}
                    </a>
                  </li>
                  <li>
                    <a href="/history" aria-current={props.current === 'history' ? 'page' : undefined}>
                      History
                    </a>
                  </li>
                  <li>
                    <a href="/mail" aria-current={props.current === 'mail' ? 'page' : undefined}>
                      Sent mail
                    </a>
                  </li>
                  {props.approver.operator &&
                    OPERATOR_PAGES.map(([key, href, name]) => (
                      <li>
                        <a href={href} aria-current={props.current === key ? 'page' : undefined}>
                          {name}
                        </a>
                      </li>
                    ))}
                </ul>
              </nav>
            )}
            {props.approver && (
              <div class="who">
                <span>
                  Signed in as <Shown text={props.approver.label} />
                </span>
                {props.approver.csrf && (
                  <form method="post" action="/logout">
                    <input type="hidden" name="_csrf" value={props.approver.csrf} />
                    <button class="secondary" type="submit">
                      Sign out
                    </button>
                  </form>
                )}
              </div>
            )}
          </div>
        </header>
        <main id="main">{props.children}</main>
      </body>
    </html>
  );
}

/** The sign-in form; `csrf` is the double-submit value also set as a cookie. */
export function LoginPage({
  csrf,
  error,
  next,
}: {
  csrf: string;
  error?: string | undefined;
  /** An OAuth authorization request to return to once signed in. */
  next?: string | undefined;
}) {
  return (
    <Layout title="Sign in">
      <div class="narrow">
        <h1>Sign in to approve</h1>
        {error && (
          <div class="error" role="alert" id="login-error">
            {error}
          </div>
        )}
        <form method="post" action="/login" class="card">
          <input type="hidden" name="_csrf" value={csrf} />
          {next && <input type="hidden" name="next" value={next} />}
          <label for="token">Approver token</label>
          <p class="hint" id="token-hint">
            Issued once with <code>pnpm bulkhead approvers add --label "your name"</code>. MCP tokens do not
            open this console.
          </p>
          <input
            id="token"
            name="token"
            type="password"
            autocomplete="off"
            spellcheck={false}
            required
            aria-describedby={error ? 'token-hint login-error' : 'token-hint'}
            aria-invalid={error ? 'true' : undefined}
          />
          <div class="actions">
            <button class="primary" type="submit">
              Sign in
            </button>
          </div>
        </form>
      </div>
    </Layout>
  );
}

/** Every request waiting for a decision, oldest first: what it does, with what, who asked, how long ago. */
export function PendingPage(props: {
  approver: Approver;
  approvals: { approval: ApprovalRecord; rows: ArgumentRow[]; findings: TextFindings }[];
  truncated: boolean;
}) {
  return (
    <Layout title="Pending" approver={props.approver} pending={props.approvals.length} current="pending">
      <h1>Waiting for approval</h1>
      {props.approvals.length === 0 ? (
        <p>Nothing waits for approval.</p>
      ) : (
        <p class="hint">Oldest first: the first one expires soonest. Nothing here has happened yet.</p>
      )}
      {props.approvals.map(({ approval: a, rows, findings: found }) => (
        <article class="card" aria-labelledby={`p-${a.id}`}>
          <h2 id={`p-${a.id}`}>
            <a href={`/approvals/${a.id}`}>
              <Shown text={a.preview} />
            </a>
          </h2>
          <LookClosely of={found} where="in it; the detail page explains each mark" />
          <dl class="meta">
            <ToolOn approval={a} />
            <dt>Requested by</dt>
            <dd>
              <Shown text={a.requestedByLabel ?? 'unknown'} />
            </dd>
            <dt>Age</dt>
            <dd>
              <time datetime={a.requestedAt.toISOString()}>{ago(a.requestedAt)}</time> (expires{' '}
              {until(a.expiresAt)})
            </dd>
          </dl>
          <ArgumentTable rows={rows} full={false} caption="Arguments (long texts cut here)" />
          <a class="button primary" href={`/approvals/${a.id}`} aria-label={`Review and decide ${a.id}`}>
            Review and decide
          </a>
        </article>
      ))}
      {props.truncated && <p>More are waiting than fit on this page; decide these first.</p>}
    </Layout>
  );
}

/**
 * What the decision came to, shown after the decision redirects back here. The sentence comes from the
 * approval's state, never from the address: an undecided request has none, whatever the URL says.
 */
function DecidedNotice({ approval: a, status }: { approval: ApprovalRecord; status: ApprovalStatus }) {
  const said: Partial<Record<ApprovalStatus, string>> = {
    rejected: 'Rejected. It will never run.',
    executed: 'Approved and executed.',
    failed: 'Approved, but it failed; see the error below.',
    approved: `Approved. The ${a.server} server runs it within a second.`,
  };
  const sentence = said[status];
  if (!sentence) return null;
  return (
    <div class="notice" role="status">
      {sentence} {status === 'approved' && <a href={`/approvals/${a.id}`}>Refresh to see the result</a>}
    </div>
  );
}

/** The action's summary and its story: who asked, when, the decision, the run and its result. */
function ActionCard({
  approval: a,
  status,
  previewFindings,
}: {
  approval: ApprovalRecord;
  status: ApprovalStatus;
  previewFindings: TextFindings;
}) {
  return (
    <section class="card" aria-labelledby="what">
      <h2 id="what">The action</h2>
      <p class="preview">
        <Shown text={a.preview} />
      </p>
      <Findings of={previewFindings} />
      <dl class="meta">
        <dt>Status</dt>
        <dd>
          <Badge status={status} />
        </dd>
        <ToolOn approval={a} />
        <dt>Requested by</dt>
        <dd>
          <Shown text={a.requestedByLabel ?? 'unknown'} />
          {a.customerId && (
            <>
              , for customer <Shown text={a.customerId} />
            </>
          )}
        </dd>
        <dt>Requested</dt>
        <dd>
          <time datetime={a.requestedAt.toISOString()}>{when(a.requestedAt)}</time> ({ago(a.requestedAt)})
        </dd>
        <dt>Expires</dt>
        <dd>
          <time datetime={a.expiresAt.toISOString()}>{when(a.expiresAt)}</time>
        </dd>
        <ActionStory approval={a} />
      </dl>
    </section>
  );
}

/** The rows of the action card that exist once something happened: decided, withdrawn, ran, failed. */
function ActionStory({ approval: a }: { approval: ApprovalRecord }) {
  return (
    <>
      {a.decidedAt && <dt>Decided</dt>}
      {a.decidedAt && (
        <dd>
          {when(a.decidedAt)} by <Shown text={a.decidedBy ?? 'unknown'} />
          {a.decisionReason && (
            <>
              {' — “'}
              <Shown text={a.decisionReason} />
              {'”'}
            </>
          )}
        </dd>
      )}
      {a.withdrawnAt && <dt>Withdrawn</dt>}
      {a.withdrawnAt && (
        <dd>{when(a.withdrawnAt)} by the requester, before anyone decided: it will never run</dd>
      )}
      {a.asTask && <dt>Asked as</dt>}
      {a.asTask && (
        <dd>
          an MCP task: the client follows it by its task id, <code>{a.id}</code>, and receives the result
        </dd>
      )}
      {a.executedAt && <dt>Ran</dt>}
      {a.executedAt && (
        <dd>
          {when(a.executedAt)} in {a.durationMs} ms
        </dd>
      )}
      {a.result !== null && a.result !== undefined && <dt>Result</dt>}
      {a.result !== null && a.result !== undefined && (
        <dd>
          <Json value={a.result} />
        </dd>
      )}
      {a.error && <dt>Error</dt>}
      {a.error && (
        <dd>
          <Shown text={a.error} />
        </dd>
      )}
      {a.filedInTrace && <dt>Trace</dt>}
      {a.filedInTrace && (
        <dd>
          <code>{a.filedInTrace.split('-')[1]}</code> (the call that filed it; its execution links to it)
        </dd>
      )}
    </>
  );
}

/** The stored arguments in full, with the hash the decision carries. */
function ArgumentsCard({
  approval: a,
  rows,
  shownHash,
}: {
  approval: ApprovalRecord;
  rows: ArgumentRow[];
  shownHash: string;
}) {
  return (
    <section class="card" aria-labelledby="args">
      <h2 id="args">What will run</h2>
      <p class="hint">
        The arguments stored with this request, read when this page was made: the {a.server} server runs{' '}
        <code>{a.tool}</code> with exactly these, field by field and in full. The sentence above is the
        server&#39;s summary; these are the facts. Hidden characters are shown as{' '}
        <mark class="hidden">[U+…]</mark>, and letters of another script than the rest of their word are{' '}
        <mark class="mixed">
          <span class="odd">marked</span>
        </mark>
        .
      </p>
      {shownHash !== a.argumentsHash && (
        <p class="error" role="alert">
          The stored arguments do not match the hash recorded with the request: they were changed after it was
          made. Approving is refused; reject it and ask for a new request.
        </p>
      )}
      <ArgumentTable rows={rows} full caption={`The arguments of ${a.id}, as they will run`} />
      <p class="hint">
        Arguments hash <code>sha256:{shownHash}</code>: your decision carries it, and it is refused if the
        arguments change before it is recorded.
      </p>
    </section>
  );
}

/** The values the tool's effect will use, as read when the request was made: the approval fixes them. */
function ValuesCard({ approval: a, rows }: { approval: ApprovalRecord; rows: ArgumentRow[] }) {
  return (
    <section class="card" aria-labelledby="values">
      <h2 id="values">What its effect will use</h2>
      <p class="hint">
        Read when the request was made, besides the arguments: what the database or another system held then.
        The {a.server} server reads them again when it runs the action and refuses it if any differs, so an
        approval carries out exactly these.
      </p>
      <ArgumentTable rows={rows} full caption={`The values ${a.id} was filed with`} />
    </section>
  );
}

/** The decision form: a reason, Approve or Reject, the session's CSRF token and the shown arguments' hash. */
function DecideCard(props: {
  approval: ApprovalRecord;
  approver: Approver;
  shownHash: string;
  error?: string | undefined;
  reason?: string | undefined;
}) {
  return (
    <section class="card" aria-labelledby="decide">
      <h2 id="decide">Decide</h2>
      <form method="post" action={`/approvals/${props.approval.id}/decide`}>
        <input type="hidden" name="_csrf" value={props.approver.csrf ?? ''} />
        <input type="hidden" name="hash" value={props.shownHash} />
        <label for="reason">Reason</label>
        <p class="hint" id="reason-hint">
          Optional to approve, required to reject. The requester sees it; the audit log keeps it.
        </p>
        <textarea
          id="reason"
          name="reason"
          rows={3}
          maxlength={1000}
          aria-describedby={props.error ? 'reason-hint decision-error' : 'reason-hint'}
        >
          {props.reason ?? ''}
        </textarea>
        <div class="actions">
          <button class="approve" type="submit" name="decision" value="approve">
            Approve and run
          </button>
          <button class="reject" type="submit" name="decision" value="reject">
            Reject
          </button>
        </div>
      </form>
    </section>
  );
}

/** Every audit event that names the approval, and the deliveries of its notifications. */
function AuditTrailCard({ events, deliveries }: { events: ApprovalEvent[]; deliveries: ApprovalDelivery[] }) {
  return (
    <section class="card" aria-labelledby="trail">
      <h2 id="trail">Audit trail</h2>
      <table class="stack">
        <caption>Every audit event that names this approval, oldest first.</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Step</th>
            <th scope="col">Outcome</th>
            <th scope="col">By</th>
          </tr>
        </thead>
        <tbody>
          {events.map((e) => (
            <tr>
              <td data-label="When">{when(e.at)}</td>
              <td data-label="Step">
                <code>
                  <Shown text={e.method} />
                </code>
              </td>
              <td data-label="Outcome">{e.outcome}</td>
              <td data-label="By">
                <Shown text={e.tokenLabel ?? ''} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {deliveries.length > 0 && (
        <>
          <h2 class="later">Deliveries</h2>
          <ul>
            {deliveries.map((d) => (
              <li>
                <Shown text={d.kind} />: {d.status} after {d.attempts} attempt{d.attempts === 1 ? '' : 's'}
                {d.lastError && (
                  <>
                    {' (last error: '}
                    <Shown text={d.lastError} />)
                  </>
                )}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

/** One approval: everything a person needs to decide, the decision form while pending, the story after. */
export function DetailPage(props: {
  approver: Approver;
  pending: number;
  approval: ApprovalRecord;
  /** The stored arguments, field by field: what will run. */
  rows: ArgumentRow[];
  /** The hash of exactly the arguments shown; the decision carries it, and is refused if they changed. */
  shownHash: string;
  /** The values its effect will use (`approvedValues`), field by field; none for a tool without them. */
  valueRows: ArgumentRow[];
  events: ApprovalEvent[];
  deliveries: ApprovalDelivery[];
  error?: string | undefined;
  reason?: string | undefined;
  decided?: boolean;
}) {
  const a = props.approval;
  const status = effectiveStatus(a);
  const previewFindings = findings(a.preview);
  const argFindings = argumentFindings([...props.rows, ...props.valueRows]);
  return (
    <Layout title={`Approval ${a.id}`} approver={props.approver} pending={props.pending}>
      <h1>
        Approval <code>{a.id}</code>
      </h1>
      {props.error && (
        <div class="error" role="alert" id="decision-error">
          <Shown text={props.error} />
        </div>
      )}
      {props.decided && !props.error && <DecidedNotice approval={a} status={status} />}
      <LookClosely of={mergeFindings([previewFindings, argFindings])} where="below, each with a note" />
      <ActionCard approval={a} status={status} previewFindings={previewFindings} />
      <ArgumentsCard approval={a} rows={props.rows} shownHash={props.shownHash} />
      {props.valueRows.length > 0 && <ValuesCard approval={a} rows={props.valueRows} />}
      {status === 'pending' && (
        <DecideCard
          approval={a}
          approver={props.approver}
          shownHash={props.shownHash}
          error={props.error}
          reason={props.reason}
        />
      )}
      <AuditTrailCard events={props.events} deliveries={props.deliveries} />
      <p>
        <a href="/">Back to the pending requests</a>
      </p>
    </Layout>
  );
}

function Select(props: { id: string; label: string; value: string | undefined; options: readonly string[] }) {
  return (
    <div>
      <label for={props.id}>{props.label}</label>
      <select id={props.id} name={props.id}>
        <option value="" selected={!props.value}>
          Any
        </option>
        {props.options.map((o) => (
          <option value={o} selected={props.value === o}>
            {visible(o)}
          </option>
        ))}
      </select>
    </div>
  );
}

/** Every request with its outcome, filtered by status, server and tool. */
export function HistoryPage(props: {
  approver: Approver;
  pending: number;
  approvals: ApprovalRecord[];
  truncated: boolean;
  filter: { status?: string | undefined; server?: string | undefined; tool?: string | undefined };
  servers: string[];
  tools: string[];
}) {
  return (
    <Layout title="History" approver={props.approver} pending={props.pending} current="history">
      <h1>History</h1>
      <form method="get" action="/history" class="filters" aria-label="Filter the history">
        <Select id="status" label="Status" value={props.filter.status} options={APPROVAL_STATUSES} />
        <Select id="server" label="Server" value={props.filter.server} options={props.servers} />
        <Select id="tool" label="Tool" value={props.filter.tool} options={props.tools} />
        <div>
          <button class="secondary" type="submit">
            Filter
          </button>
        </div>
      </form>
      {props.approvals.length === 0 ? (
        <p>No requests match.</p>
      ) : (
        <table class="stack">
          <caption>
            {props.truncated
              ? `The ${props.approvals.length} newest matching requests; narrow the filter to see older ones.`
              : `${props.approvals.length} matching request${props.approvals.length === 1 ? '' : 's'}, newest first.`}
          </caption>
          <thead>
            <tr>
              <th scope="col">Requested</th>
              <th scope="col">Action</th>
              <th scope="col">Tool</th>
              <th scope="col">Status</th>
              <th scope="col">Decided by</th>
            </tr>
          </thead>
          <tbody>
            {props.approvals.map((a) => (
              <tr>
                <td data-label="Requested">{when(a.requestedAt)}</td>
                <td data-label="Action">
                  <a href={`/approvals/${a.id}`}>
                    <Shown text={a.preview} />
                  </a>
                </td>
                <td data-label="Tool">
                  <code>
                    <Shown text={a.tool} />
                  </code>{' '}
                  on <Shown text={a.server} />
                </td>
                <td data-label="Status">
                  <Badge status={effectiveStatus(a)} />
                </td>
                <td data-label="Decided by">
                  <Shown text={a.decidedBy ?? '—'} />
                  {a.decisionReason && (
                    <>
                      {': “'}
                      <Shown text={a.decisionReason} />
                      {'”'}
                    </>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Layout>
  );
}

/**
 * The e-mails the local mail catcher of `pnpm start` received: what approved actions really sent,
 * as an SMTP server got them, each with the approval it carried out.
 */
export function SentMailPage(props: {
  approver: Approver;
  pending: number;
  mails: CaughtMail[];
  limit: number;
}) {
  return (
    <Layout title="Sent mail" approver={props.approver} pending={props.pending} current="mail">
      <h1>Sent mail</h1>
      <p>
        E-mails that approved actions sent, as the local mail catcher received them over SMTP. With a real
        mail server (BULKHEAD_SMTP_URL) they go there instead, and this page stays empty.
      </p>
      {props.mails.length === 0 ? (
        <p>No e-mail received yet.</p>
      ) : (
        <>
          <p>
            {props.mails.length === props.limit
              ? `The ${props.limit} newest e-mails, newest first.`
              : `${props.mails.length} e-mail${props.mails.length === 1 ? '' : 's'}, newest first.`}
          </p>
          {props.mails.map((m) => (
            <article class="card" aria-label={`E-mail to ${m.to.join(', ')}: ${m.subject}`}>
              <h2>
                <Shown text={m.subject || '(no subject)'} />
              </h2>
              <dl class="meta">
                <dt>To</dt>
                <dd>
                  <Shown text={m.to.join(', ')} />
                </dd>
                <dt>From</dt>
                <dd>
                  <Shown text={m.from} />
                </dd>
                <dt>Received</dt>
                <dd>{when(m.receivedAt)}</dd>
                <dt>Approval</dt>
                <dd>
                  {m.approvalId ? (
                    <a href={`/approvals/${encodeURIComponent(m.approvalId)}`}>
                      <Shown text={m.approvalId} />
                    </a>
                  ) : (
                    'none named'
                  )}
                </dd>
              </dl>
              <div class="text">
                <Shown text={m.text} lineBreaks />
              </div>
            </article>
          ))}
        </>
      )}
    </Layout>
  );
}

/** A short page for refusals and missing things. */
export function MessagePage(props: { title: string; message: string; approver?: Approver | undefined }) {
  return (
    <Layout title={props.title} approver={props.approver}>
      <h1>{props.title}</h1>
      <p>
        <Shown text={props.message} />
      </p>
      <p>
        <a href={props.approver ? '/' : '/login'}>
          {props.approver ? 'Back to the pending requests' : 'Sign in'}
        </a>
      </p>
    </Layout>
  );
}
