import type { Context } from 'hono';
import type { OAuthContext } from '../context.ts';
import { JWT_BEARER } from './jwt-bearer.ts';

/** `GET /.well-known/oauth-authorization-server`: the authorization server's metadata (RFC 8414). */
export function metadata(c: Context, ctx: OAuthContext): Response {
  const { issuer, servers } = ctx;
  c.header('Access-Control-Allow-Origin', '*');
  return c.json({
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    registration_endpoint: `${issuer}/oauth/register`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    // The JWT bearer grant (RFC 7523) takes ID-JAGs of the configured IdP (enterprise-managed authorization).
    grant_types_supported: ['authorization_code', 'refresh_token', ...(ctx.idJag ? [JWT_BEARER] : [])],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: [...new Set(servers.flatMap((s) => s.scopes))].sort(),
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
  });
}
