/** @jsxImportSource hono/jsx */
import { when } from '../../layout/time.ts';
import { Shown } from '../../visible-text.tsx';
import type { OperatorGrant, OperatorToken } from './data.ts';

/** The person's page. */
export function personPath(person: string): string {
  return `/operator/persons/${encodeURIComponent(person)}`;
}

/** The server's page. */
export function serverPath(server: string): string {
  return `/operator/servers/${encodeURIComponent(server)}`;
}

function PersonLink({ person }: { person: string | null }) {
  return person === null ? (
    <span class="hint">nobody named</span>
  ) : (
    <a href={personPath(person)}>
      <Shown text={person} />
    </a>
  );
}

function ServerLink({ server }: { server: string }) {
  return (
    <a href={serverPath(server)}>
      <Shown text={server} />
    </a>
  );
}

function Scopes({ scopes }: { scopes: string[] }) {
  return (
    <>
      {scopes.map((s, i) => (
        <>
          {i > 0 && ', '}
          <code>
            <Shown text={s} />
          </code>
        </>
      ))}
    </>
  );
}

function At({ date, none }: { date: Date | null; none: string }) {
  return date ? <time datetime={date.toISOString()}>{when(date)}</time> : <span class="hint">{none}</span>;
}

/** A Revoke button: the form posts to `action` with the session's CSRF token and the page to return to. */
function RevokeButton(props: { action: string; csrf: string; back: string; name: string }) {
  return (
    <form method="post" action={props.action} class="inline">
      <input type="hidden" name="_csrf" value={props.csrf} />
      <input type="hidden" name="back" value={props.back} />
      <button class="reject small" type="submit" aria-label={props.name}>
        Revoke
      </button>
    </form>
  );
}

/** Every token of a list, with a Revoke button for the live ones. */
export function TokenTable(props: { tokens: OperatorToken[]; csrf: string; back: string; caption: string }) {
  return (
    <div class="scroll" role="region" aria-label="Tokens" tabindex={0}>
      <table class="list">
        <caption>{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">Label</th>
            <th scope="col">Server</th>
            <th scope="col">Scopes</th>
            <th scope="col">Customer</th>
            <th scope="col">Person</th>
            <th scope="col">Created</th>
            <th scope="col">Expires</th>
            <th scope="col">Last used</th>
            <th scope="col">Created by</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {props.tokens.map((t) => (
            <tr id={`token-${t.id}`}>
              <td>
                <Shown text={t.label} />
                <div class="hint">
                  <code>
                    <Shown text={t.id} />
                  </code>
                  {t.kind === 'approver' && ', approver token'}
                  {t.grantId && (
                    <>
                      , OAuth grant{' '}
                      <code>
                        <Shown text={t.grantId} />
                      </code>
                    </>
                  )}
                </div>
              </td>
              <td>
                <ServerLink server={t.server} />
              </td>
              <td>
                <Scopes scopes={t.scopes} />
              </td>
              <td>{t.customerId ? <Shown text={t.customerId} /> : <span class="hint">none</span>}</td>
              <td>
                <PersonLink person={t.owner} />
              </td>
              <td>
                <At date={t.createdAt} none="" />
              </td>
              <td>
                <At date={t.expiresAt} none="never" />
              </td>
              <td>
                <At date={t.lastUsedAt} none="never" />
              </td>
              <td>
                <Shown text={t.createdBy} />
              </td>
              <td>
                <span class={`badge ${t.state}`}>{t.state}</span>
                {t.state === 'active' && (
                  <RevokeButton
                    action={`/operator/tokens/${t.id}/revoke`}
                    csrf={props.csrf}
                    back={props.back}
                    name={`Revoke token ${t.id}`}
                  />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Every OAuth grant of a list, with a Revoke button for the live ones. */
export function GrantTable(props: { grants: OperatorGrant[]; csrf: string; back: string; caption: string }) {
  return (
    <div class="scroll" role="region" aria-label="OAuth grants" tabindex={0}>
      <table class="list">
        <caption>{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">Client</th>
            <th scope="col">Server</th>
            <th scope="col">Scopes</th>
            <th scope="col">Customer</th>
            <th scope="col">Person</th>
            <th scope="col">Granted by</th>
            <th scope="col">Created</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {props.grants.map((g) => (
            <tr id={`grant-${g.id}`}>
              <td>
                <Shown text={g.clientName ?? '(no name)'} />
                <div class="hint">
                  <code>
                    <Shown text={g.clientId} />
                  </code>
                  , grant{' '}
                  <code>
                    <Shown text={g.id} />
                  </code>
                </div>
              </td>
              <td>
                <ServerLink server={g.server} />
              </td>
              <td>
                <Scopes scopes={g.scopes} />
              </td>
              <td>{g.customerId ? <Shown text={g.customerId} /> : <span class="hint">none</span>}</td>
              <td>
                <PersonLink person={g.owner} />
              </td>
              <td>
                <Shown text={g.grantedBy} />
              </td>
              <td>
                <At date={g.createdAt} none="" />
              </td>
              <td>
                <span class={`badge ${g.state}`}>{g.state}</span>
                {g.revokedReason && (
                  <div class="hint">
                    <Shown text={g.revokedReason} />
                  </div>
                )}
                {g.state === 'active' && (
                  <RevokeButton
                    action={`/operator/grants/${encodeURIComponent(g.id)}/revoke`}
                    csrf={props.csrf}
                    back={props.back}
                    name={`Revoke grant ${g.id}`}
                  />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
