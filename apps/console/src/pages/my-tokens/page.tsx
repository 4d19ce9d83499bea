/** @jsxImportSource hono/jsx */
import { Layout } from '../../layout/layout.tsx';
import { when } from '../../layout/time.ts';
import type { OAuthServer } from '../../oauth/context.ts';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';
import type { MyRights, MyToken } from './data.ts';
import { DEFAULT_EXPIRY, MY_EXPIRY_CHOICES, type MyTokenFields } from './form.ts';

/** The sentence that tells a person without token rights what is missing, and who can change it. */
export function missingRights(rights: Pick<MyRights, 'groups'>, groupsClaim: string): string {
  const groups = rights.groups.length
    ? `none of your groups (${rights.groups.join(', ')}) is mapped to hold tokens`
    : `your identity provider sent no groups (the "${groupsClaim}" claim), so no group of yours is mapped to hold tokens`;
  return `You cannot issue tokens of your own: ${groups}. An operator gives a group that right with \`bulkhead groups add <group> --tokens <server>\` (or --tokens <server>:<scope>, or on the console's Groups page); it counts from your next page.`;
}

function At({ date, none }: { date: Date | null; none: string }) {
  return date ? <time datetime={date.toISOString()}>{when(date)}</time> : <span class="hint">{none}</span>;
}

/** The person's live tokens, each with a Revoke button. */
function MyTokenTable(props: { tokens: MyToken[]; owner: string; csrf: string }) {
  return (
    <div class="scroll" role="region" aria-label="My tokens" tabindex={0}>
      <table class="list">
        <caption>
          {props.tokens.length === 1 ? 'One live token' : `${props.tokens.length} live tokens`}
        </caption>
        <thead>
          <tr>
            <th scope="col">Label</th>
            <th scope="col">Server</th>
            <th scope="col">Scopes</th>
            <th scope="col">Customer</th>
            <th scope="col">Owner</th>
            <th scope="col">Created</th>
            <th scope="col">Expires</th>
            <th scope="col">Last used</th>
            <th scope="col">Revoke</th>
          </tr>
        </thead>
        <tbody>
          {props.tokens.map((t) => (
            <tr id={`token-${t.id}`}>
              <td>
                <Shown text={t.label} />
                <div class="hint">
                  <code>{t.id}</code>
                </div>
              </td>
              <td>
                <Shown text={t.server} />
              </td>
              <td>
                <code>
                  <Shown text={t.scopes.join(', ')} />
                </code>
              </td>
              <td>{t.customerId ? <Shown text={t.customerId} /> : <span class="hint">none</span>}</td>
              <td>
                <Shown text={props.owner} />
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
                <form method="post" action={`/my-tokens/${t.id}/revoke`} class="inline">
                  <input type="hidden" name="_csrf" value={props.csrf} />
                  <button class="reject small" type="submit" aria-label={`Revoke token ${t.id}`}>
                    Revoke
                  </button>
                </form>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** One issue form: for one server the person may hold tokens for, with the scopes they may choose. */
function IssueForm(props: {
  server: OAuthServer;
  scopes: string[];
  customers: { id: string; name: string }[] | null;
  fields: MyTokenFields | undefined;
  csrf: string;
}) {
  const { server, fields } = props;
  const id = (name: string) => `${server.name}-${name}`;
  const ticked = (s: string) => (fields ? fields.scopes.includes(s) : true);
  return (
    <form method="post" action="/my-tokens" class="card" aria-label={`Issue a token for ${server.name}`}>
      <h3>
        <Shown text={server.name} />
      </h3>
      <p class="hint">
        <Shown text={server.description} />
      </p>
      <input type="hidden" name="_csrf" value={props.csrf} />
      <input type="hidden" name="server" value={server.name} />
      <label for={id('label')}>Label</label>
      <p class="hint" id={id('label-hint')}>
        Which client uses it, e.g. Cursor on my laptop: one token per client.
      </p>
      <input
        id={id('label')}
        name="label"
        value={fields?.label ?? ''}
        required
        maxlength={200}
        aria-describedby={id('label-hint')}
      />
      <fieldset>
        <legend>Scopes</legend>
        {props.scopes.map((s) => (
          <label class="check">
            <input type="checkbox" name="scopes" value={s} checked={ticked(s)} />
            <code>{s}</code>
          </label>
        ))}
      </fieldset>
      {props.customers && (
        <>
          <label for={id('customer')}>Customer</label>
          <p class="hint" id={id('customer-hint')}>
            The token sees this customer's data only.
          </p>
          <select id={id('customer')} name="customer" required aria-describedby={id('customer-hint')}>
            <option value="">Choose a customer</option>
            {props.customers.map((c) => (
              <option value={c.id} selected={fields?.customer === c.id}>
                {c.id} — {c.name}
              </option>
            ))}
          </select>
        </>
      )}
      <label for={id('expires')}>Expires after</label>
      <select id={id('expires')} name="expires">
        {MY_EXPIRY_CHOICES.map((e) => (
          <option value={e.value} selected={(fields?.expires ?? DEFAULT_EXPIRY) === e.value}>
            {e.words}
          </option>
        ))}
      </select>
      <div class="actions">
        <button class="primary" type="submit">
          Issue a token for {server.name}
        </button>
      </div>
    </form>
  );
}

/**
 * "My tokens": the signed-in person's live MCP tokens (owner: the person), revoke one; and issue a new
 * one for each server their groups let them hold, or the sentence that names what is missing.
 */
export function MyTokensPage(props: {
  approver: Approver;
  rights: MyRights;
  tokens: MyToken[];
  holdable: { server: OAuthServer; scopes: string[]; customers: { id: string; name: string }[] | null }[];
  groupsClaim: string;
  notice?: string | undefined;
  error?: string | undefined;
  /** The form posted with an error, shown again as typed. */
  fields?: MyTokenFields | undefined;
}) {
  const { rights } = props;
  const owner = rights.name ?? rights.email ?? props.approver.label;
  return (
    <Layout title="My tokens" approver={props.approver} current="my-tokens">
      <h1>My tokens</h1>
      <p>
        Tokens for MCP clients, issued to you (<Shown text={owner} />
        {rights.email && rights.name ? (
          <>
            , <Shown text={rights.email} />
          </>
        ) : (
          ''
        )}
        ): one per client. Whatever a token asks for that waits for approval, someone else approves.
      </p>
      {props.notice && (
        <div class="notice" role="status">
          <Shown text={props.notice} />
        </div>
      )}
      {props.error && (
        <div class="error" role="alert">
          <Shown text={props.error} />
        </div>
      )}
      <h2>Live tokens</h2>
      {props.tokens.length === 0 ? (
        <p>You hold no live tokens.</p>
      ) : (
        <MyTokenTable tokens={props.tokens} owner={owner} csrf={props.approver.csrf ?? ''} />
      )}
      <h2 class="later">Issue a token</h2>
      {rights.tokens.length === 0 ? (
        <p id="missing-rights">
          <Shown text={missingRights(rights, props.groupsClaim)} />
        </p>
      ) : props.holdable.length === 0 ? (
        <p id="missing-rights">
          <Shown
            text={`Your groups (${rights.tokenGroups.join(', ')}) may hold tokens for ${rights.tokens.join(', ')}, but this console serves none of those servers.`}
          />
        </p>
      ) : (
        <>
          <p class="hint">
            Your groups ({rights.tokenGroups.join(', ')}) let you hold tokens for {rights.tokens.join(', ')}.
            The token is shown once, with the configuration to paste into your MCP client.
          </p>
          {props.holdable.map((h) => (
            <IssueForm
              server={h.server}
              scopes={h.scopes}
              customers={h.customers}
              fields={props.fields?.server === h.server.name ? props.fields : undefined}
              csrf={props.approver.csrf ?? ''}
            />
          ))}
        </>
      )}
    </Layout>
  );
}
