import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import { scimBearer } from './bearer.ts';
import { scimJson } from './resources.ts';
import { mountScimGroups } from './groups.ts';
import { mountScimUsers } from './users.ts';

/** What this SCIM service supports (RFC 7643 §5): PATCH and the `eq` filter; no bulk, sort, ETag or password. */
const SERVICE_PROVIDER_CONFIG = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
  patch: { supported: true },
  bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
  filter: { supported: true, maxResults: 1000 },
  changePassword: { supported: false },
  sort: { supported: false },
  etag: { supported: false },
  authenticationSchemes: [
    { type: 'oauthbearertoken', name: 'Bearer token', description: 'The SCIM token (BULKHEAD_SCIM_TOKEN).' },
  ],
};

/**
 * SCIM 2.0 for the company's IdP (Okta, Entra ID): `/scim/v2/Users` and `/scim/v2/Groups`, behind the
 * SCIM bearer; without `BULKHEAD_SCIM_TOKEN` the routes answer 404. People are recorded under
 * `issuer` (the console's OpenID Provider), so that a SCIM user and a sign-in meet as one person.
 */
export function mountScim(
  app: Hono<ConsoleEnv>,
  ctx: ConsoleContext,
  token: string | undefined,
  issuer: string | null,
): void {
  app.use('/scim/v2/*', scimBearer(ctx, token));
  if (!token) return;
  app.get('/scim/v2/ServiceProviderConfig', (c) => scimJson(c, SERVICE_PROVIDER_CONFIG));
  mountScimUsers(app, ctx, token, issuer);
  mountScimGroups(app, ctx, token);
}
