/** @jsxImportSource hono/jsx */
import { Layout } from '../layout/layout.tsx';
import type { Approver } from '../sessions.ts';
import { Shown } from '../visible-text.tsx';

/** The request being consented to, echoed in the form so that the POST can check it all again. */
export interface AuthorizationRequest {
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  code_challenge_method: string;
  state: string;
  scope: string;
  resource: string;
}

/**
 * The consent page: which client (by its name and where it sends the person back), which server,
 * which scopes, and — for a customer-bound server — which customer; Allow or Deny.
 */
export function ConsentPage(props: {
  approver: Approver;
  /** Requests waiting for a decision, for the navigation. */
  pending: number;
  clientName: string | null;
  clientId: string;
  redirectHost: string;
  server: string;
  serverDescription: string;
  scopes: string[];
  customers: { id: string; name: string }[] | null;
  request: AuthorizationRequest;
  error?: string | undefined;
}) {
  const { request } = props;
  return (
    <Layout title="Grant access" approver={props.approver} pending={props.pending}>
      <div class="narrow">
        <h1>Grant access to {props.server}?</h1>
        {props.error && (
          <div class="error" role="alert">
            {props.error}
          </div>
        )}
        <form method="post" action="/oauth/authorize" class="card">
          <dl class="meta">
            <dt>Client</dt>
            <dd id="consent-client">
              <Shown text={props.clientName ?? props.clientId} />
            </dd>
            <dt>Returns to</dt>
            <dd>
              <code>
                <Shown text={props.redirectHost} />
              </code>
            </dd>
            <dt>Server</dt>
            <dd id="consent-server">
              <code>{props.server}</code> — {props.serverDescription}
            </dd>
            <dt>Scopes</dt>
            <dd id="consent-scopes">
              {props.scopes.map((s, i) => (
                <>
                  {i > 0 && ', '}
                  <code>{s}</code>
                </>
              ))}
            </dd>
          </dl>
          {props.customers && (
            <>
              <label for="customer_id">Customer</label>
              <p class="hint" id="customer-hint">
                The client will see this customer's data only, and nothing of any other customer.
              </p>
              <select id="customer_id" name="customer_id" required aria-describedby="customer-hint">
                <option value="">Choose a customer</option>
                {props.customers.map((c) => (
                  <option value={c.id}>
                    {c.id} — {c.name}
                  </option>
                ))}
              </select>
            </>
          )}
          <p class="hint">
            The client gets a token for this server only, valid for an hour at a time and renewed until the
            grant is revoked (<code>bulkhead tokens revoke</code>). Every call it makes is audited under its
            name.
          </p>
          <input type="hidden" name="_csrf" value={props.approver.csrf ?? ''} />
          {Object.entries(request).map(([name, value]) => (
            <input type="hidden" name={name} value={value} />
          ))}
          <div class="actions">
            <button class="approve" type="submit" name="decision" value="allow">
              Allow
            </button>
            <button class="reject" type="submit" name="decision" value="deny">
              Deny
            </button>
          </div>
        </form>
      </div>
    </Layout>
  );
}
