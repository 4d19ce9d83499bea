import { createHash } from 'node:crypto';
import { createRemoteJWKSet, decodeJwt, errors, jwtVerify, type JWTPayload } from 'jose';

/** The JWT `typ` of an Identity Assertion JWT Authorization Grant (draft-ietf-oauth-identity-assertion-authz-grant). */
export const ID_JAG_TYP = 'oauth-id-jag+jwt';

/** Clock skew allowed on `exp` and `iat`, in seconds (the database allows the same). */
export const ID_JAG_SKEW_SECONDS = 30;

/** Why an assertion was not verified: a reason word for the audit event and a sentence for the client. */
export class IdJagRefusal extends Error {
  override readonly name = 'IdJagRefusal';
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** The claims of a verified ID-JAG that the token endpoint acts on. */
export interface IdJagClaims {
  iss: string;
  sub: string;
  jti: string;
  clientId: string;
  resource: string;
  scopes: string[];
}

/** Verifies ID-JAGs signed by one trusted issuer, whose keys come from its discovery document's `jwks_uri`. */
export interface IdJagVerifier {
  issuer: string;
  verify(assertion: string, audience: string): Promise<IdJagClaims>;
}

/** `iss` and `sub` of an assertion read without verifying it (to name the person in a refusal's audit event). */
export function unverifiedSubject(assertion: string): { iss: string | null; sub: string | null } {
  try {
    const { iss, sub } = decodeJwt(assertion);
    return { iss: iss ?? null, sub: sub ?? null };
  } catch {
    return { iss: null, sub: null };
  }
}

/** The SHA-256 of the assertion, hex: what the audit event keeps so that the JWS can be matched later. */
export function assertionHash(assertion: string): string {
  return createHash('sha256').update(assertion).digest('hex');
}

/** The JWKS URL of the issuer's OpenID Provider metadata (or RFC 8414 authorization server metadata). */
async function discoverJwksUri(issuer: string): Promise<URL> {
  const base = issuer.replace(/\/$/, '');
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(5000), redirect: 'error' });
    if (!res.ok) continue;
    const meta = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (meta.issuer !== issuer || typeof meta.jwks_uri !== 'string') continue;
    return new URL(meta.jwks_uri);
  }
  throw new Error(`no discovery document of ${issuer} names its jwks_uri`);
}

function scopesOf(payload: JWTPayload): string[] {
  return typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
}

/** What jose's refusal of a JWS means for the audit event. */
function refusalOf(err: unknown): IdJagRefusal {
  if (err instanceof errors.JWTExpired)
    return new IdJagRefusal('assertion_expired', 'The ID-JAG has expired.');
  if (err instanceof errors.JWTClaimValidationFailed) {
    const reason =
      err.claim === 'aud' ? 'audience_mismatch' : err.claim === 'iss' ? 'issuer_untrusted' : 'claims_invalid';
    return new IdJagRefusal(reason, `The ID-JAG's ${err.claim} claim is not acceptable here.`);
  }
  if (err instanceof errors.JOSEError && err.code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED')
    return new IdJagRefusal('signature_invalid', 'The ID-JAG is not signed by the trusted issuer.');
  if (err instanceof errors.JWKSNoMatchingKey)
    return new IdJagRefusal(
      'signature_invalid',
      'The ID-JAG is signed by a key the trusted issuer does not publish.',
    );
  if (err instanceof errors.JOSEError)
    return new IdJagRefusal('assertion_invalid', `The ID-JAG is not a valid JWS (${err.code}).`);
  return new IdJagRefusal('issuer_unreachable', "The trusted issuer's keys could not be fetched.");
}

/**
 * A verifier for `issuer` (BULKHEAD_OIDC_ISSUER): the JWKS is discovered on first use and cached by jose
 * (refetched when a token names an unknown `kid`, at most every 30 s); a failed discovery is tried again
 * at the next assertion. Checks `typ`, the signature (asymmetric algorithms only), `iss`, `aud`, `exp` and
 * `iat` with 30 s of skew, and that `sub`, `jti`, `client_id` and `resource` are present.
 */
export function createIdJagVerifier(issuer: string): IdJagVerifier {
  let jwks: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;
  const keys = () => {
    jwks ??= discoverJwksUri(issuer).then((uri) => createRemoteJWKSet(uri, { cooldownDuration: 30_000 }));
    jwks.catch(() => (jwks = undefined));
    return jwks;
  };
  return {
    issuer,
    async verify(assertion, audience) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(assertion, await keys(), {
          typ: ID_JAG_TYP,
          issuer,
          audience,
          clockTolerance: ID_JAG_SKEW_SECONDS,
          requiredClaims: ['sub', 'jti', 'exp', 'iat'],
          algorithms: [
            'RS256',
            'RS384',
            'RS512',
            'PS256',
            'PS384',
            'PS512',
            'ES256',
            'ES384',
            'ES512',
            'EdDSA',
          ],
        }));
      } catch (err) {
        if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'typ')
          throw new IdJagRefusal('typ_mismatch', `The assertion's typ is not ${ID_JAG_TYP}.`);
        throw refusalOf(err);
      }
      if ((payload.iat ?? 0) > Date.now() / 1000 + ID_JAG_SKEW_SECONDS)
        throw new IdJagRefusal('assertion_expired', 'The ID-JAG was issued in the future.');
      const { client_id: clientId, resource } = payload;
      if (typeof clientId !== 'string' || typeof resource !== 'string')
        throw new IdJagRefusal('claims_invalid', 'The ID-JAG lacks client_id or resource.');
      return {
        iss: issuer,
        sub: payload.sub!,
        jti: payload.jti!,
        clientId,
        resource,
        scopes: scopesOf(payload),
      };
    },
  };
}
