/** @jsxImportSource hono/jsx */
import type { Context } from 'hono';
import { page } from '../../layout/layout.tsx';
import { STYLE_HASH } from '../../layout/styles.ts';
import { countPending, sameSecret, type Approver } from '../../sessions.ts';
import { checkRequest, type CheckedRequest, type Refused } from '../authorization-request.ts';
import { ConsentPage } from '../consent-page.tsx';
import type { OAuthContext } from '../context.ts';
import { refusalPage } from '../refusal-page.tsx';
import { canGrant, createGrant, customerChoices, customerExists } from '../store.ts';

/** The authorization request's fields, which the consent form echoes back. */
const REQUEST_FIELDS = [
  'client_id',
  'redirect_uri',
  'code_challenge',
  'code_challenge_method',
  'state',
  'scope',
  'resource',
] as const;

/** The CSP source that lets the consent form's answer go back to the client's redirect URI. */
function formTarget(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

/** The signed-in approver, if they may grant; else the page that says why not. */
async function granter(
  c: Context,
  ctx: OAuthContext,
  started: number,
  clientId: string,
): Promise<{ ok: true; approver: Approver } | Refused> {
  const approver = await ctx.session(c);
  if (!approver) {
    const url = new URL(c.req.url);
    return {
      ok: false,
      response: c.redirect(`/login?next=${encodeURIComponent(url.pathname + url.search)}`, 303),
    };
  }
  if (!(await canGrant(ctx.sql, approver.proof))) {
    await ctx.record(
      c,
      'authorize',
      'forbidden',
      started,
      { reason: 'may_not_grant' },
      { by: approver, clientId },
    );
    return {
      ok: false,
      response: refusalPage(
        c,
        'You may not grant access',
        'Your approver token may decide approvals but not grant clients access to servers. Ask for one issued with `bulkhead approvers add --can-grant`.',
        403,
        approver,
      ),
    };
  }
  return { ok: true, approver };
}

/** The consent page, with a CSP whose form-action lets the answer go back to the client. */
async function consent(
  c: Context,
  ctx: OAuthContext,
  approver: Approver,
  checked: CheckedRequest,
  customers: { id: string; name: string }[] | null,
  error?: string,
) {
  c.header(
    'Content-Security-Policy',
    `default-src 'none'; style-src ${STYLE_HASH}; form-action 'self' ${formTarget(checked.request.redirect_uri)}; frame-ancestors 'none'; base-uri 'none'`,
  );
  return page(
    c,
    <ConsentPage
      approver={approver}
      pending={await countPending(ctx.sql)}
      clientName={checked.client.clientName}
      clientId={checked.client.clientId}
      redirectHost={new URL(checked.request.redirect_uri).host || checked.request.redirect_uri}
      server={checked.server.name}
      serverDescription={checked.server.description}
      scopes={checked.scopes}
      customers={customers}
      request={checked.request}
      error={error}
    />,
    error ? 400 : 200,
  );
}

/** `GET /oauth/authorize`: the consent page for a checked request, shown to a person who may grant. */
export async function showConsent(c: Context, ctx: OAuthContext): Promise<Response> {
  const started = performance.now();
  // Signed in first: until a person who may grant is here, the request is not looked at — no client
  // metadata document is fetched and no error is sent to a redirect URI on anyone's behalf.
  const who = await granter(c, ctx, started, c.req.query('client_id') ?? '');
  if (!who.ok) return who.response;
  const checked = await checkRequest(c, ctx, c.req.query());
  if (!checked.ok) return checked.response;
  return consent(
    c,
    ctx,
    who.approver,
    checked,
    checked.server.customerBound ? await customerChoices(ctx.sql) : null,
  );
}

/**
 * `POST /oauth/authorize`: the consent form's answer. The request is checked again in full; Deny
 * sends `access_denied` back, Allow creates the grant and sends its code.
 */
export async function decideConsent(c: Context, ctx: OAuthContext): Promise<Response> {
  const { sql, record, logger } = ctx;
  const started = performance.now();
  const form = await c.req.parseBody();
  const q: Record<string, string | undefined> = { response_type: 'code' };
  for (const name of [...REQUEST_FIELDS, '_csrf', 'decision', 'customer_id'])
    q[name] = typeof form[name] === 'string' ? form[name] : undefined;
  const who = await granter(c, ctx, started, q.client_id ?? '');
  if (!who.ok) return who.response;
  const approver = who.approver;
  if (!q._csrf || !approver.csrf || !sameSecret(q._csrf, approver.csrf)) {
    await record(c, 'authorize', 'forbidden', started, { reason: 'csrf' }, { by: approver });
    return refusalPage(
      c,
      'Form refused',
      'The form did not carry this session’s security token. Start again from the client.',
      403,
      approver,
    );
  }
  const checked = await checkRequest(c, ctx, q);
  if (!checked.ok) return checked.response;
  const { client, server, scopes, request } = checked;
  const redirect = new URL(request.redirect_uri);
  if (request.state) redirect.searchParams.set('state', request.state);
  redirect.searchParams.set('iss', ctx.issuer);
  const who2 = { by: approver, clientId: client.clientId };
  if (q.decision !== 'allow') {
    await record(c, 'authorize', 'rejected', started, { reason: 'denied', server: server.name }, who2);
    redirect.searchParams.set('error', 'access_denied');
    redirect.searchParams.set('error_description', 'The person denied access.');
    return c.redirect(redirect.toString(), 303);
  }
  let customerId: string | null = null;
  if (server.customerBound) {
    customerId = q.customer_id ?? '';
    if (!customerId || !(await customerExists(sql, customerId)))
      return consent(
        c,
        ctx,
        approver,
        checked,
        await customerChoices(sql),
        'Choose the customer this access is bound to.',
      );
  }
  // A person grants only within their groups' rights (`--tokens`), as the database reads them now.
  const granted = await createGrant(sql, {
    clientId: client.clientId,
    server: server.name,
    scopes,
    customerId,
    proof: approver.proof,
    redirectUri: request.redirect_uri,
    codeChallenge: request.code_challenge,
    resource: server.resource,
  }).catch((err: unknown) => {
    if ((err as { code?: string }).code !== '42501') throw err;
    return (err as Error).message;
  });
  if (typeof granted === 'string') {
    await record(
      c,
      'authorize',
      'forbidden',
      started,
      { reason: 'outside_rights', server: server.name },
      who2,
    );
    return refusalPage(c, 'You may not grant this access', `${granted}.`, 403, approver);
  }
  const { grantId, code } = granted;
  await record(
    c,
    'authorize',
    'approved',
    started,
    {
      grant_id: grantId,
      server: server.name,
      scopes,
      customer_id: customerId,
      client_name: client.clientName,
    },
    who2,
  );
  logger.info(
    { grantId, server: server.name, client: client.clientId, by: approver.label },
    'oauth access granted',
  );
  redirect.searchParams.set('code', code);
  return c.redirect(redirect.toString(), 303);
}
