/** @jsxImportSource hono/jsx */
import { visible } from '@bulkhead/core/operator';
import { Layout } from '../../layout/layout.tsx';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';
import type { OperatorGrant, OperatorToken } from '../tokens/data.ts';
import { personPath } from '../tokens/tables.tsx';

function TokenList({ tokens }: { tokens: OperatorToken[] }) {
  return (
    <ul id="revoke-tokens">
      {tokens.map((t) => (
        <li>
          <Shown text={t.label} /> —{' '}
          {t.kind === 'approver' ? (
            'approver token for the console'
          ) : (
            <>
              token for <Shown text={t.server} />
            </>
          )}{' '}
          (
          <code>
            <Shown text={t.id} />
          </code>
          {t.grantId && (
            <>
              , of OAuth grant{' '}
              <code>
                <Shown text={t.grantId} />
              </code>
            </>
          )}
          )
        </li>
      ))}
    </ul>
  );
}

function GrantList({ grants }: { grants: OperatorGrant[] }) {
  return (
    <ul id="revoke-grants">
      {grants.map((g) => (
        <li>
          <Shown text={g.clientName ?? g.clientId} /> on <Shown text={g.server} /> (
          <code>
            <Shown text={g.id} />
          </code>
          ), with its refresh tokens
        </li>
      ))}
    </ul>
  );
}

/**
 * The confirmation before a person's offboarding: exactly which tokens and grants stop working. The
 * form carries a fingerprint of them; the revocation is refused when they changed meanwhile.
 */
export function RevokePersonPage(props: {
  approver: Approver;
  person: string;
  tokens: OperatorToken[];
  grants: OperatorGrant[];
  fingerprint: string;
  /** The operator's own approver token is among them: revoking signs the operator out. */
  includesOwn: boolean;
  error?: string | undefined;
}) {
  const { person, tokens, grants } = props;
  const nothing = tokens.length === 0 && grants.length === 0;
  return (
    <Layout title={`Revoke everything of ${visible(person)}`} approver={props.approver} current="tokens">
      <h1>
        Revoke everything of <Shown text={person} />?
      </h1>
      {props.error && (
        <div class="error" role="alert">
          {props.error}
        </div>
      )}
      {nothing ? (
        <p>Nothing of this person is live: there is nothing to revoke.</p>
      ) : (
        <section class="card" aria-labelledby="what-stops">
          <h2 id="what-stops">What stops working</h2>
          <p>Each server refuses these from its next request on. Revoking cannot be undone.</p>
          {tokens.length > 0 && (
            <>
              <h3>
                {tokens.length} token{tokens.length === 1 ? '' : 's'}
              </h3>
              <TokenList tokens={tokens} />
            </>
          )}
          {grants.length > 0 && (
            <>
              <h3>
                {grants.length} OAuth grant{grants.length === 1 ? '' : 's'}
              </h3>
              <GrantList grants={grants} />
            </>
          )}
          {props.includesOwn && (
            <div class="warn" role="note">
              <p>This includes the approver token you are signed in with: you will be signed out.</p>
            </div>
          )}
          <form method="post" action={`${personPath(person)}/revoke`}>
            <input type="hidden" name="_csrf" value={props.approver.csrf ?? ''} />
            <input type="hidden" name="shown" value={props.fingerprint} />
            <div class="actions">
              <button class="reject" type="submit">
                Revoke all {tokens.length + grants.length}
              </button>
              <a class="button secondary" href={personPath(person)}>
                Cancel
              </a>
            </div>
          </form>
        </section>
      )}
      {nothing && (
        <p>
          <a href={personPath(person)}>Back to the person</a>
        </p>
      )}
    </Layout>
  );
}
