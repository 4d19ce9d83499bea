import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import { scimBearer } from './bearer.ts';
import { mountScimGroups } from './groups.ts';
import { mountScimUsers } from './users.ts';

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
  mountScimUsers(app, ctx, token, issuer);
  mountScimGroups(app, ctx, token);
}
