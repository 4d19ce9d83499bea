import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type Configuration } from 'oidc-provider';

/** A person the test's identity provider knows: signed in by typing `login` (any password). */
export interface TestPerson {
  login: string;
  name: string;
  email: string;
  groups: string[];
}

/** A real OpenID Provider (`oidc-provider`, certified) on a loopback port, configured by the test. */
export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

/**
 * Starts an OpenID Provider for one client (the console, at each of `redirectUris`): authorization code with PKCE
 * (required), `iss` in the authorization response (RFC 9207), a `groups` claim with the profile scope in
 * the ID token, as Keycloak and Okta send it when configured to. Its development login page signs in
 * whoever types a login of `people` (`sub` = the login). With `keys`, it signs with them and publishes
 * their public halves at its `jwks_uri`.
 */
export async function startTestIdp(
  redirectUris: string[],
  people: TestPerson[],
  /** The IdP's signing keys (private JWKs), when the test needs to sign with them too. */
  keys?: Record<string, unknown>[],
): Promise<TestIdp> {
  const http: Server = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const clientId = 'bulkhead-console';
  const clientSecret = 'test-client-secret-0123456789abcdef';
  const configuration: Configuration = {
    ...(keys ? { jwks: { keys } } : {}),
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    claims: { openid: ['sub'], profile: ['name', 'groups'], email: ['email', 'email_verified'] },
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    cookies: { keys: ['bulkhead-test-idp-cookie-key'] },
    features: { devInteractions: { enabled: true } },
    findAccount: (_ctx, id) => {
      const person = people.find((p) => p.login === id);
      if (!person) return undefined;
      return {
        accountId: id,
        claims: () => ({
          sub: id,
          name: person.name,
          email: person.email,
          email_verified: true,
          groups: person.groups,
        }),
      };
    },
    // A first-party client: no consent page (the login page is the interaction the test drives).
    loadExistingGrant: async (ctx) => {
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client!.clientId,
        accountId: ctx.oidc.session!.accountId!,
      });
      grant.addOIDCScope('openid profile email');
      await grant.save();
      return grant;
    },
  };
  const provider = new Provider(issuer, configuration);
  http.on('request', provider.callback());
  return {
    issuer,
    clientId,
    clientSecret,
    close: () => new Promise((resolve) => http.close(() => resolve())),
  };
}
