import { randomBytes, createHash } from 'node:crypto';
import type { Context } from 'hono';
import { ClientMetadataError, findClient } from '../clients.ts';
import { sameResource, type OAuthContext } from '../context.ts';
import { assertionHash, IdJagRefusal, unverifiedSubject, type IdJagClaims } from '../id-jag.ts';

/** RFC 7523's grant type, by which a client presents an ID-JAG. */
export const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/** How long an access token from an ID-JAG lives; there is no refresh token (the client asks its IdP again). */
export const IDJAG_ACCESS_SECONDS = 900;

const ID_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';

/** A fresh token id and secret in the shape of the servers' `bho_<server>_<id>_<secret>`. */
function freshToken(): { id: string; secret: string } {
  const id = Array.from(randomBytes(12), (b) => ID_ALPHABET[b % ID_ALPHABET.length]).join('');
  return { id, secret: randomBytes(32).toString('base64url') };
}

/** What the database answered for an exchange. */
interface Exchanged {
  refused: string | null;
  personId: string | null;
  personName: string | null;
  tokenId: string | null;
  scopes: string[] | null;
}

/** The client, authenticated as the token endpoint authenticates it (public client: a known client_id). */
async function authenticate(ctx: OAuthContext, clientId: string | undefined): Promise<string> {
  if (!clientId) throw new IdJagRefusal('client_missing', 'client_id is missing.');
  try {
    return (await findClient(ctx.sql, clientId)).clientId;
  } catch (err) {
    if (!(err instanceof ClientMetadataError)) throw err;
    throw new IdJagRefusal('client_unknown', `The client is not known here: ${err.message}.`);
  }
}

/** The verified claims and the Bulkhead server their `resource` names, or a refusal. */
async function verified(
  ctx: OAuthContext,
  assertion: string,
  clientId: string,
): Promise<{ claims: IdJagClaims; server: string; scopes: string[] }> {
  const claims = await ctx.idJag!.verify(assertion, ctx.issuer);
  if (claims.clientId !== clientId)
    throw new IdJagRefusal('client_mismatch', 'The ID-JAG was issued to another client.');
  const server = ctx.servers.find((s) => sameResource(s.resource, claims.resource));
  if (!server) throw new IdJagRefusal('resource_unknown', 'The ID-JAG names no resource of this console.');
  const unknown = claims.scopes.filter((s) => !server.scopes.includes(s));
  if (unknown.length > 0)
    throw new IdJagRefusal('scope_unknown', `${server.name} has no scope ${unknown.join(', ')}.`);
  // No scope asked for means the server's every scope (which the person's groups must then allow).
  return { claims, server: server.name, scopes: claims.scopes.length > 0 ? claims.scopes : server.scopes };
}

/**
 * `POST /oauth/token` with `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523) and an
 * ID-JAG as `assertion` (the MCP extension io.modelcontextprotocol/enterprise-managed-authorization):
 * the console verifies the JWS against BULKHEAD_OIDC_ISSUER's keys, and the database
 * (`bulkhead_oauth_idjag_token`) re-reads its claims, resolves the person by `iss` + `sub`, refuses a
 * replayed `jti` and a server or scopes beyond their groups' rights, and records a 15-minute access token
 * for them. Every exchange and refusal is audited with the person and the assertion's SHA-256.
 */
export async function jwtBearer(
  c: Context,
  ctx: OAuthContext,
  field: (name: string) => string | undefined,
): Promise<Response> {
  const started = performance.now();
  const assertion = field('assertion') ?? '';
  const clientId = field('client_id');
  const { iss, sub } = unverifiedSubject(assertion);
  const summary: Record<string, unknown> = {
    grant_type: JWT_BEARER,
    assertion_sha256: assertion ? assertionHash(assertion) : null,
    iss,
    sub,
  };
  const refuse = async (err: IdJagRefusal, person: { id: string | null; name: string | null } | null) => {
    await ctx.record(
      c,
      'token',
      err.reason === 'client_unknown' ? 'unauthorized' : 'bad_request',
      started,
      { ...summary, reason: err.reason, person_id: person?.id ?? null, person_name: person?.name ?? null },
      { clientId: clientId ?? null },
    );
    ctx.logger.info({ reason: err.reason, clientId }, 'oauth ID-JAG exchange refused');
    const [error, status] =
      err.reason === 'client_unknown' ? ['invalid_client', 401] : ['invalid_grant', 400];
    return c.json({ error, error_description: err.message }, status as 400 | 401);
  };
  try {
    if (!assertion) throw new IdJagRefusal('assertion_missing', 'The assertion is missing.');
    const client = await authenticate(ctx, clientId);
    const { claims, server, scopes } = await verified(ctx, assertion, client);
    const { id, secret } = freshToken();
    const expiresAt = new Date(Date.now() + IDJAG_ACCESS_SECONDS * 1000);
    const [row] = await ctx.sql<Exchanged[]>`
      select refused, person_id as "personId", person_name as "personName", token_id as "tokenId", scopes
      from bulkhead_oauth_idjag_token(${assertion}, ${claims.iss}, ${ctx.issuer}, ${client}, ${server},
        ${scopes}, ${id}, ${createHash('sha256').update(secret).digest()},
        ${`ID-JAG of ${client} for ${claims.sub}`}, ${expiresAt})`;
    const person = { id: row!.personId, name: row!.personName };
    if (row!.refused) return await refuse(new IdJagRefusal(row!.refused, sentence(row!.refused)), person);
    await ctx.record(
      c,
      'token',
      'ok',
      started,
      { ...summary, server, jti: claims.jti, person_id: person.id, person_name: person.name },
      { by: { tokenId: row!.tokenId, label: null }, clientId: client },
    );
    return c.json({
      access_token: `bho_${server}_${id}_${secret}`,
      token_type: 'Bearer',
      expires_in: IDJAG_ACCESS_SECONDS,
      scope: row!.scopes!.join(' '),
    });
  } catch (err) {
    if (!(err instanceof IdJagRefusal)) throw err;
    return refuse(err, null);
  }
}

/** The sentence for a refusal the database decided. */
function sentence(reason: string): string {
  switch (reason) {
    case 'assertion_replayed':
      return 'The ID-JAG was already redeemed (its jti was seen before).';
    case 'person_unknown':
      return 'The person the ID-JAG names has never signed in to Bulkhead.';
    case 'person_deactivated':
      return 'The person the ID-JAG names was deactivated.';
    case 'no_rights':
      return 'None of the groups of the person is mapped to --tokens for this server and these scopes.';
    default:
      return `The ID-JAG was refused (${reason}).`;
  }
}
