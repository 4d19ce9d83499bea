/** @jsxImportSource hono/jsx */
import { Layout } from '../../layout/layout.tsx';
import { when } from '../../layout/time.ts';
import type { OAuthServer } from '../../oauth/context.ts';
import type { Approver } from '../../sessions.ts';
import { Shown } from '../../visible-text.tsx';
import { EXPIRY_CHOICES, type IssueFields } from './form.ts';

/** The first step: which MCP server the token opens (its scopes and customer binding shape the form). */
export function ChooseServerPage(props: { approver: Approver; servers: OAuthServer[]; person?: string }) {
  return (
    <Layout title="Issue a token" approver={props.approver} current="tokens">
      <div class="narrow">
        <h1>Issue a token</h1>
        {props.servers.length === 0 ? (
          <p>The console knows no MCP servers, so it issues no tokens; use bulkhead tokens issue.</p>
        ) : (
          <form method="get" action="/operator/tokens/new" class="card">
            {props.person && <input type="hidden" name="person" value={props.person} />}
            <label for="server">Server</label>
            <p class="hint" id="server-hint">
              The token opens this MCP server only.
            </p>
            <select id="server" name="server" required aria-describedby="server-hint">
              {props.servers.map((s) => (
                <option value={s.name}>
                  {s.name} — {s.description}
                </option>
              ))}
            </select>
            <div class="actions">
              <button class="primary" type="submit">
                Continue
              </button>
            </div>
          </form>
        )}
      </div>
    </Layout>
  );
}

function TextField(props: { id: string; label: string; hint: string; value: string }) {
  return (
    <>
      <label for={props.id}>{props.label}</label>
      <p class="hint" id={`${props.id}-hint`}>
        {props.hint}
      </p>
      <input
        id={props.id}
        name={props.id}
        value={props.value}
        required
        maxlength={200}
        aria-describedby={`${props.id}-hint`}
      />
    </>
  );
}

/** The token's details for one server: label, person, scopes, customer (customer-bound servers only), lifetime. */
export function IssueTokenPage(props: {
  approver: Approver;
  server: OAuthServer;
  customers: { id: string; name: string }[] | null;
  fields: IssueFields;
  error?: string | undefined;
}) {
  const { server, fields } = props;
  return (
    <Layout title={`Issue a token for ${server.name}`} approver={props.approver} current="tokens">
      <div class="narrow">
        <h1>Issue a token for {server.name}</h1>
        {props.error && (
          <div class="error" role="alert">
            <Shown text={props.error} />
          </div>
        )}
        <form method="post" action="/operator/tokens" class="card">
          <input type="hidden" name="_csrf" value={props.approver.csrf ?? ''} />
          <input type="hidden" name="server" value={server.name} />
          <TextField
            id="label"
            label="Label"
            hint="Which client or person uses it, e.g. Claude Code on Ana's laptop."
            value={fields.label}
          />
          <TextField
            id="person"
            label="Person"
            hint="Who it is issued to: they may not approve what it asks for, and it is revoked with everything else of theirs."
            value={fields.person}
          />
          <fieldset>
            <legend>Scopes</legend>
            {server.scopes.map((s) => (
              <label class="check">
                <input type="checkbox" name="scopes" value={s} checked={fields.scopes.includes(s)} />
                <code>{s}</code>
              </label>
            ))}
          </fieldset>
          {props.customers && (
            <>
              <label for="customer">Customer</label>
              <p class="hint" id="customer-hint">
                The token sees this customer's data only.
              </p>
              <select id="customer" name="customer" required aria-describedby="customer-hint">
                <option value="">Choose a customer</option>
                {props.customers.map((c) => (
                  <option value={c.id} selected={fields.customer === c.id}>
                    {c.id} — {c.name}
                  </option>
                ))}
              </select>
            </>
          )}
          <label for="expires">Expires after</label>
          <select id="expires" name="expires">
            {EXPIRY_CHOICES.map((e) => (
              <option value={e.value} selected={fields.expires === e.value}>
                {e.words}
              </option>
            ))}
          </select>
          <div class="actions">
            <button class="primary" type="submit">
              Issue the token
            </button>
            <a class="button secondary" href="/operator/tokens">
              Cancel
            </a>
          </div>
        </form>
      </div>
    </Layout>
  );
}

/**
 * The new token, shown once, with the client configuration the CLI prints: for an operator (back to the
 * tokens) or for a person's own token (`current` and `back` of "My tokens").
 */
export function IssuedTokenPage(props: {
  approver: Approver;
  id: string;
  token: string;
  server: string;
  label: string;
  person: string;
  scopes: string[];
  customerId: string | null;
  expiresAt: Date | null;
  configs: { client: string; where: string; text: string }[];
  current?: 'tokens' | 'my-tokens';
  back?: { href: string; words: string };
}) {
  const back = props.back ?? { href: '/operator/tokens', words: 'Back to the tokens' };
  return (
    <Layout title="Token issued" approver={props.approver} current={props.current ?? 'tokens'}>
      <h1>Token issued</h1>
      <div class="warn" role="note">
        <p>This is the only time the token is shown: store it now. Only its hash is kept.</p>
      </div>
      <section class="card" aria-labelledby="issued">
        <h2 id="issued">
          <Shown text={props.label} />
        </h2>
        <pre id="token">
          <Shown text={props.token} />
        </pre>
        <dl class="meta">
          <dt>Id</dt>
          <dd>
            <code>{props.id}</code>
          </dd>
          <dt>Server</dt>
          <dd>{props.server}</dd>
          <dt>Person</dt>
          <dd>
            <Shown text={props.person} />
          </dd>
          <dt>Scopes</dt>
          <dd>{props.scopes.join(', ')}</dd>
          <dt>Customer</dt>
          <dd>{props.customerId ? <Shown text={props.customerId} /> : 'none'}</dd>
          <dt>Expires</dt>
          <dd>{props.expiresAt ? when(props.expiresAt) : 'never'}</dd>
        </dl>
      </section>
      {props.configs.map((c) => (
        <section class="card" aria-label={`${c.client} configuration`}>
          <h2>{c.client}</h2>
          <p class="hint">{c.where}</p>
          <pre>
            <Shown text={c.text} lineBreaks />
          </pre>
        </section>
      ))}
      <p>
        <a href={back.href}>{back.words}</a>
      </p>
    </Layout>
  );
}
