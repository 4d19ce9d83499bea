import * as oidc from 'openid-client';

/** The company's OpenID Provider as the console is configured for it (`BULKHEAD_OIDC_*`). */
export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The ID token claim that lists the person's groups (default `groups`). */
  groupsClaim: string;
}

/** What a sign-in needs to come back: kept by the database, handed back once at the callback. */
export interface OidcFlow {
  state: string;
  nonce: string;
  verifier: string;
  /** Where the browser is sent to sign in at the IdP. */
  url: URL;
}

/** The ID token of a completed code exchange, verified by openid-client (signature, iss, aud, nonce). */
export interface OidcResult {
  idToken: string;
  sub: string;
}

/** A sign-in at the IdP that did not complete, and why (for the audit event and the page). */
export class OidcRefusal extends Error {
  override readonly name = 'OidcRefusal';
  constructor(
    readonly reason: 'idp_error' | 'idp_unreachable' | 'response_invalid',
    message: string,
  ) {
    super(message);
  }
}

/** The console's OpenID Connect client: authorization code with PKCE (S256), state, nonce, `iss` (RFC 9207). */
export interface OidcClient {
  settings: OidcSettings;
  /** Starts a sign-in: fresh state, nonce and PKCE verifier, and the IdP's authorization URL for them. */
  begin(redirectUri: string): Promise<OidcFlow>;
  /**
   * Completes a sign-in at its callback URL: checks `state`, `iss` (RFC 9207: the response's issuer is the
   * configured one), exchanges the code with the verifier and checks the ID token (signature by the IdP's
   * JWKS, issuer, audience, expiry, nonce). Throws OidcRefusal.
   */
  finish(callback: URL, flow: { state: string; nonce: string; verifier: string }): Promise<OidcResult>;
}

/** An error's message with those of its causes (openid-client wraps what oauth4webapi found). */
function causes(err: unknown): string {
  const messages: string[] = [];
  for (let e = err; e instanceof Error && messages.length < 4; e = e.cause) {
    if (!messages.includes(e.message)) messages.push(e.message);
    // An OAuth error response: its code (`invalid_grant`) and description say what the IdP refused.
    const { error, error_description: description } = e as { error?: unknown; error_description?: unknown };
    if (typeof error === 'string')
      messages.push(typeof description === 'string' ? `${error} (${description})` : error);
  }
  return messages.join(': ');
}

/** Plain http is allowed only for an IdP on loopback (tests, a local Keycloak). */
function loopback(url: URL): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}

/**
 * The console's OpenID Connect client. The IdP's metadata is discovered on first use and kept (a console
 * starts while its IdP is down; a failed discovery is tried again at the next sign-in).
 */
export function createOidcClient(settings: OidcSettings): OidcClient {
  const issuer = new URL(settings.issuer);
  let config: Promise<oidc.Configuration> | undefined;
  const configuration = () => {
    config ??= oidc
      .discovery(
        issuer,
        settings.clientId,
        settings.clientSecret,
        oidc.ClientSecretBasic(settings.clientSecret),
        issuer.protocol === 'http:' && loopback(issuer) ? { execute: [oidc.allowInsecureRequests] } : {},
      )
      .catch((err: unknown) => {
        config = undefined;
        throw new OidcRefusal(
          'idp_unreachable',
          `the identity provider at ${settings.issuer} could not be reached (${(err as Error).message})`,
        );
      });
    return config;
  };
  return {
    settings,
    async begin(redirectUri) {
      const c = await configuration();
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const verifier = oidc.randomPKCECodeVerifier();
      const url = oidc.buildAuthorizationUrl(c, {
        redirect_uri: redirectUri,
        scope: 'openid profile email',
        response_type: 'code',
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      return { state, nonce, verifier, url };
    },
    async finish(callback, flow) {
      const c = await configuration();
      const error = callback.searchParams.get('error');
      if (error)
        throw new OidcRefusal(
          'idp_error',
          `the identity provider answered ${error}${callback.searchParams.get('error_description') ? `: ${callback.searchParams.get('error_description')}` : ''}`,
        );
      try {
        const tokens = await oidc.authorizationCodeGrant(c, callback, {
          pkceCodeVerifier: flow.verifier,
          expectedState: flow.state,
          expectedNonce: flow.nonce,
          idTokenExpected: true,
        });
        const claims = tokens.claims();
        if (!tokens.id_token || !claims) throw new Error('no ID token');
        return { idToken: tokens.id_token, sub: claims.sub };
      } catch (err) {
        if (err instanceof OidcRefusal) throw err;
        throw new OidcRefusal('response_invalid', causes(err));
      }
    },
  };
}
