/** @jsxImportSource hono/jsx */
import { Layout } from '../../layout/layout.tsx';

/**
 * The sign-in page: the company's identity provider when one is configured, and the approver token form
 * unless token sign-in is off. `csrf` is the double-submit value also set as a cookie.
 */
export function LoginPage({
  csrf,
  error,
  next,
  oidc,
  tokenSignIn = true,
}: {
  csrf: string;
  error?: string | undefined;
  /** An OAuth authorization request to return to once signed in. */
  next?: string | undefined;
  /** The identity provider's host, when people sign in there. */
  oidc?: string | undefined;
  tokenSignIn?: boolean | undefined;
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
        {oidc && (
          <div class="card">
            <p>
              <a
                class="button primary"
                href={`/login/oidc${next ? `?next=${encodeURIComponent(next)}` : ''}`}
              >
                Sign in with your company account
              </a>
            </p>
            <p class="hint">At {oidc}. What you may do comes from your groups there.</p>
          </div>
        )}
        {tokenSignIn && (
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
        )}
      </div>
    </Layout>
  );
}
