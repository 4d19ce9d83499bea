/** @jsxImportSource hono/jsx */
import type { CaughtMail } from '@bulkhead/core/operator';
import { Layout } from '../../layout/layout.tsx';
import { when } from '../../layout/time.ts';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';

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
