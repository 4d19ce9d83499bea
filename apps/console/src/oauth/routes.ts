import type { Hono } from 'hono';
import type { ConsoleEnv } from '../context.ts';
import { createOAuthContext, type OAuthDeps } from './context.ts';
import { decideConsent, showConsent } from './endpoints/authorize.tsx';
import { metadata } from './endpoints/metadata.ts';
import { preflight } from './endpoints/preflight.ts';
import { register } from './endpoints/register.ts';
import { revoke } from './endpoints/revoke.ts';
import { token } from './endpoints/token.ts';
import { createRegistrationLimiter, REGISTRATION_POLICY } from './registration-limit.ts';

/**
 * The console as an OAuth 2.1 authorization server for the MCP servers: metadata (RFC 8414),
 * dynamic registration (RFC 7591) and Client ID Metadata Documents, the consent page (authorization
 * code with PKCE S256, RFC 8707 resource indicators), the token endpoint with refresh-token rotation
 * and reuse detection, and revocation (RFC 7009). Every refusal is audited as server `console`,
 * method `oauth/<endpoint>`.
 */
export function mountOAuth(app: Hono<ConsoleEnv>, deps: OAuthDeps): void {
  const ctx = createOAuthContext(deps);
  const limiter = createRegistrationLimiter(deps.registrationPolicy ?? REGISTRATION_POLICY);
  app.get('/.well-known/oauth-authorization-server', (c) => metadata(c, ctx));
  app.options('/oauth/:endpoint{token|register|revoke}', preflight);
  app.post('/oauth/register', (c) => register(c, ctx, limiter));
  app.get('/oauth/authorize', (c) => showConsent(c, ctx));
  app.post('/oauth/authorize', (c) => decideConsent(c, ctx));
  app.post('/oauth/token', (c) => token(c, ctx));
  app.post('/oauth/revoke', (c) => revoke(c, ctx));
}
