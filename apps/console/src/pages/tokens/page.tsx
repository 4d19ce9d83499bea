/** @jsxImportSource hono/jsx */
import { visible } from '@bulkhead/core/operator';
import { Layout } from '../../layout/layout.tsx';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';
import {
  LIST_LIMIT,
  TOKEN_STATES,
  type OperatorGrant,
  type OperatorToken,
  type TokenFilter,
} from './data.ts';
import { GrantTable, personPath, TokenTable } from './tables.tsx';

/** What a revocation came to, shown once on the page it returns to. */
export type Notice =
  | { kind: 'token-revoked' | 'token-unchanged' | 'grant-revoked' | 'grant-unchanged'; id: string }
  | { kind: 'person-revoked'; tokens: number; grants: number };

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function NoticeBox({ notice: n }: { notice: Notice }) {
  return (
    <div class="notice" role="status">
      {n.kind === 'person-revoked' ? (
        <>
          Revoked {plural(n.tokens, 'token')} and {plural(n.grants, 'OAuth grant')} (with their access tokens)
          of this person. Their servers refuse them from the next request on.
        </>
      ) : (
        <>
          {n.kind.startsWith('token') ? 'Token' : 'Grant'}{' '}
          <code>
            <Shown text={n.id} />
          </code>{' '}
          {n.kind === 'token-revoked'
            ? 'revoked: its server refuses it from the next request on.'
            : n.kind === 'grant-revoked'
              ? 'revoked, with its access and refresh tokens.'
              : 'was already revoked, or is unknown: nothing changed.'}
        </>
      )}
    </div>
  );
}

/** Which tokens a list page shows: all of them, one person's or one server's. */
export type ListScope =
  { kind: 'all' } | { kind: 'person'; person: string } | { kind: 'server'; server: string };

function FilterForm(props: { scope: ListScope; filter: TokenFilter; action: string; servers: string[] }) {
  const { filter, scope } = props;
  return (
    <form method="get" action={props.action} class="filters" aria-label="Filter the tokens and grants">
      <div>
        <label for="q">Search</label>
        <input id="q" name="q" type="search" value={filter.q ?? ''} maxlength={200} />
      </div>
      {scope.kind === 'all' && (
        <>
          <div>
            <label for="server">Server</label>
            <select id="server" name="server">
              <option value="" selected={!filter.server}>
                Any
              </option>
              {props.servers.map((s) => (
                <option value={s} selected={filter.server === s}>
                  {visible(s)}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="person">Person</label>
            <input id="person" name="person" value={filter.person ?? ''} maxlength={200} />
          </div>
        </>
      )}
      <div>
        <label for="state">State</label>
        <select id="state" name="state">
          {TOKEN_STATES.map((s) => (
            <option value={s} selected={filter.state === s}>
              {s}
            </option>
          ))}
        </select>
      </div>
      <div>
        <button class="secondary" type="submit">
          Filter
        </button>
      </div>
    </form>
  );
}

function caption(n: number, what: string): string {
  return n > LIST_LIMIT
    ? `The ${LIST_LIMIT} newest matching ${what}s; narrow the filter to see older ones.`
    : `${plural(n, `matching ${what}`)}, newest first.`;
}

/** The tokens and grants page, of everyone, of one person or of one server. */
export function TokensPage(props: {
  approver: Approver;
  scope: ListScope;
  filter: TokenFilter;
  /** This page's path and query: where the filter form and the Revoke buttons return to. */
  here: { path: string; back: string };
  tokens: OperatorToken[];
  grants: OperatorGrant[];
  servers: string[];
  /** The scope is an MCP server the console issues tokens for. */
  canIssue: boolean;
  notice?: Notice | undefined;
}) {
  const { scope } = props;
  const csrf = props.approver.csrf ?? '';
  const title =
    scope.kind === 'person'
      ? `Tokens and grants of ${visible(scope.person)}`
      : scope.kind === 'server'
        ? `Tokens and grants for ${visible(scope.server)}`
        : 'Tokens and grants';
  return (
    <Layout title={title} approver={props.approver} current="tokens">
      <h1>
        {scope.kind === 'person' ? (
          <>
            Tokens and grants of <Shown text={scope.person} />
          </>
        ) : scope.kind === 'server' ? (
          <>
            Tokens and grants for <Shown text={scope.server} />
          </>
        ) : (
          'Tokens and grants'
        )}
      </h1>
      {props.notice && <NoticeBox notice={props.notice} />}
      <div class="actions">
        {props.canIssue && (
          <a
            class="button primary"
            href={`/operator/tokens/new${
              scope.kind === 'server'
                ? `?server=${encodeURIComponent(scope.server)}`
                : scope.kind === 'person'
                  ? `?person=${encodeURIComponent(scope.person)}`
                  : ''
            }`}
          >
            Issue a token
          </a>
        )}
        {scope.kind === 'person' && (
          <a class="button reject" href={`${personPath(scope.person)}/revoke`}>
            Revoke everything of this person
          </a>
        )}
        {scope.kind !== 'all' && (
          <a class="button secondary" href="/operator/tokens">
            All tokens and grants
          </a>
        )}
      </div>
      <FilterForm scope={scope} filter={props.filter} action={props.here.path} servers={props.servers} />
      <h2>Tokens</h2>
      {props.tokens.length === 0 ? (
        <p>No tokens match.</p>
      ) : (
        <TokenTable
          tokens={props.tokens.slice(0, LIST_LIMIT)}
          csrf={csrf}
          back={props.here.back}
          caption={caption(props.tokens.length, 'token')}
        />
      )}
      <h2 class="later">OAuth grants</h2>
      {props.grants.length === 0 ? (
        <p>
          No OAuth grants match{props.filter.state === 'expired' ? ' (a grant stands until revoked)' : ''}.
        </p>
      ) : (
        <GrantTable
          grants={props.grants.slice(0, LIST_LIMIT)}
          csrf={csrf}
          back={props.here.back}
          caption={caption(props.grants.length, 'grant')}
        />
      )}
    </Layout>
  );
}
